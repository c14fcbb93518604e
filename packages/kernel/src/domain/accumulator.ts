// Accumulates one StreamCompletion's events into the canonical assistant Message plus
// everything the kernel persists beside it (stop, classified error, vendor request id,
// merged metadata, safety notices, priced usage records).
//
// Block rules: consecutive text deltas form one text block, consecutive thinking deltas
// one thinking block; a different content event closes the open block, and so does a
// text delta marked starts_block (the vendor delimits blocks itself, e.g. separate output
// messages): it opens a new text block carrying its vendor_state verbatim. metadata,
// safety_notice, usage and stream_start carry no content and never close a block. A
// thinking_signature is stored byte for byte on the open thinking block (or on a new empty
// one when none is open) and closes it. redacted_thinking is appended whole. Tool-call
// argument fragments are joined per call id and parsed once at tool_call_done; arguments
// that are not a JSON object become an invalid_arguments ToolError for that call (the
// tool_use block stays in the message with empty input, so the model can be told).
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  type ContentBlock,
  ContentBlockSchema,
  type Message,
  MessageSchema,
  Role,
} from "@pluggableharness/protocol/content";
import type { UsageRecord } from "@pluggableharness/protocol/event";
import {
  type ModelSpec,
  SafetyKind,
  type SafetyNotice,
  type Stop,
  StopReason,
  type StreamEvent,
  type StreamMetadata,
  StreamMetadataSchema,
} from "@pluggableharness/protocol/model";
import { type ToolError, ToolErrorCategory, ToolErrorSchema } from "@pluggableharness/protocol/tool";
import { recordUsage } from "./cost.ts";
import { addDecimals, decimalFromNumber, decimalToNumber } from "./decimal.ts";
import { PricingError, ProtocolViolationError } from "./errors.ts";
import type { IdGenerator } from "./ids.ts";
import { argumentDepthProblem } from "./json-depth.ts";
import { ClassifiedModelError } from "./model-errors.ts";
import type { Clock } from "./time.ts";

export const StreamRule = {
  eventSet: "event-set",
  contentAfterTerminal: "no-content-after-stop-or-error",
  singleStop: "single-stop",
  toolCallIdUnique: "tool-call-id-unique",
  toolCallKnown: "tool-call-known",
  toolCallOpen: "tool-call-open",
  stopReasonSet: "stop-reason-set",
  matchedStopSequenceIff: "matched-stop-sequence-iff-stop-sequence",
} as const;

export interface InvalidToolCall {
  readonly id: string;
  readonly name: string;
  /** The invalid_arguments error to return to the model instead of running the call. */
  readonly error: ToolError;
}

export interface AccumulatedCompletion {
  /** The assistant message, with its kernel-assigned id and producing model/provider. */
  readonly message: Message;
  readonly stop?: Stop;
  /** The in-band error, classified. */
  readonly error?: ClassifiedModelError;
  readonly providerRequestId?: string;
  /** Every metadata event merged field by field. */
  readonly metadata?: StreamMetadata;
  /** Recognised safety notices, in arrival order. */
  readonly safetyNotices: readonly SafetyNotice[];
  /** One priced record per usage event, cost computed at receipt. */
  readonly usage: readonly UsageRecord[];
  /** Sum of usage[].costUsd, added exactly. */
  readonly costUsd: number;
  readonly invalidToolCalls: readonly InvalidToolCall[];
  /** The stream ended with a stop or an error event (not merely torn down). */
  readonly complete: boolean;
  /** Deviations that did not change the result (e.g. thinking from a non-thinking model). */
  readonly warnings: readonly string[];
}

export interface AccumulatorOptions {
  /** Declared name of the provider serving the stream. */
  readonly provider: string;
  /** The model the request was sent to; supplies pricing and produced_by_model_id. */
  readonly model: ModelSpec;
  /** Receipt time of each usage event. */
  readonly clock: Clock;
  /** Message ids (ULIDs); called once, when the message is finished. */
  readonly newMessageId: IdGenerator;
  /**
   * Tool-call ids (ToolCall.id is kernel-assigned): one per tool_call_start. The vendor's
   * id is kept as the block's vendor_id, to be sent back in its place. Without it the
   * vendor's id is used as is (tests of the accumulator alone).
   */
  readonly newToolCallId?: IdGenerator;
}

interface OpenBlock {
  readonly kind: "text" | "thinking";
  readonly index: number;
  readonly parts: string[];
}

interface ToolCallState {
  readonly name: string;
  /** The kernel's id of the call (the block's id). */
  readonly callId: string;
  readonly index: number;
  readonly fragments: string[];
  done: boolean;
}

const KNOWN_SAFETY = new Set<number>([
  SafetyKind.BUFFERING,
  SafetyKind.MODERATION,
  SafetyKind.VERIFICATION_REQUIRED,
]);

/** Later metadata supersedes earlier field by field; absent (or empty) fields mean no news. */
export function mergeMetadata(base: StreamMetadata | undefined, next: StreamMetadata): StreamMetadata {
  const out = create(StreamMetadataSchema, base ?? {});
  if (next.actualModel !== undefined) out.actualModel = next.actualModel;
  if (next.systemFingerprint !== undefined) out.systemFingerprint = next.systemFingerprint;
  if (next.serviceTier !== undefined) out.serviceTier = next.serviceTier;
  if (next.rateLimits.length > 0) out.rateLimits = [...next.rateLimits];
  if (next.liveContextWindow !== undefined) out.liveContextWindow = next.liveContextWindow;
  if (next.liveMaxOutputTokens !== undefined) out.liveMaxOutputTokens = next.liveMaxOutputTokens;
  if (next.catalogEtag !== undefined) out.catalogEtag = next.catalogEtag;
  if (next.stickyTurnToken !== undefined) out.stickyTurnToken = next.stickyTurnToken;
  out.attrs = { ...out.attrs, ...next.attrs };
  return out;
}

export class StreamAccumulator {
  readonly #opts: AccumulatorOptions;
  readonly #blocks: ContentBlock[] = [];
  #open: OpenBlock | undefined;
  /** A text block the vendor started that has had no text yet (its vendor_state). */
  #textStart: { vendorState: Uint8Array | undefined } | undefined;
  readonly #calls = new Map<string, ToolCallState>();
  #stop: Stop | undefined;
  #error: ClassifiedModelError | undefined;
  #requestId: string | undefined;
  #metadata: StreamMetadata | undefined;
  readonly #notices: SafetyNotice[] = [];
  readonly #usage: UsageRecord[] = [];
  readonly #warnings: string[] = [];
  readonly #invalid: InvalidToolCall[] = [];
  #finished: AccumulatedCompletion | undefined;

  constructor(options: AccumulatorOptions) {
    this.#opts = options;
  }

  /** Feeds one event; throws ProtocolViolationError when the stream breaks the protocol. */
  push(event: StreamEvent): void {
    if (this.#finished) throw new Error("StreamAccumulator.push after finish");
    const e = event.event;
    switch (e.case) {
      case undefined:
        throw this.#violation(StreamRule.eventSet, "an event with no variant set");
      case "streamStart":
        if (this.#requestId === undefined && e.value.providerRequestId)
          this.#requestId = e.value.providerRequestId;
        return;
      case "metadata":
        this.#metadata = mergeMetadata(this.#metadata, e.value);
        return;
      case "safetyNotice":
        if (KNOWN_SAFETY.has(e.value.kind)) this.#notices.push(e.value);
        return;
      case "usage":
        if (!this.#opts.model.pricing) throw new PricingError(`${this.#opts.model.id} declares no pricing`);
        this.#usage.push(recordUsage(e.value, this.#opts.model.pricing, this.#opts.clock()));
        return;
      case "error":
        this.#terminal("error");
        this.#closeOpen();
        this.#error = ClassifiedModelError.fromProto(e.value);
        return;
      case "stop":
        if (this.#stop) throw this.#violation(StreamRule.singleStop, "a second stop event");
        this.#terminal("stop");
        if (e.value.reason === StopReason.UNSPECIFIED)
          throw this.#violation(StreamRule.stopReasonSet, "stop without a reason");
        if ((e.value.reason === StopReason.STOP_SEQUENCE) !== (e.value.matchedStopSequence !== undefined)) {
          throw this.#violation(
            StreamRule.matchedStopSequenceIff,
            "matched_stop_sequence must be set exactly when the stop reason is stop_sequence",
          );
        }
        this.#closeOpen();
        this.#stop = e.value;
        return;
      case "textDelta":
        this.#terminal("textDelta");
        if (e.value.startsBlock) {
          this.#closeOpen();
          this.#textStart = { vendorState: e.value.vendorState };
        }
        this.#append("text", e.value.text);
        return;
      case "thinkingDelta":
        this.#terminal("thinkingDelta");
        this.#thinkingExpected("thinking_delta");
        this.#append("thinking", e.value.text);
        return;
      case "thinkingSignature": {
        this.#terminal("thinkingSignature");
        let open = this.#open;
        const current = open?.kind === "thinking" ? this.#blocks[open.index]!.block : undefined;
        if (current?.case !== "thinking" || current.value.signature !== undefined) {
          this.#closeOpen();
          open = this.#openBlock("thinking");
        }
        const block = this.#blocks[open!.index]!.block;
        if (block.case === "thinking") block.value.signature = e.value.signature;
        this.#closeOpen();
        return;
      }
      case "redactedThinking":
        this.#terminal("redactedThinking");
        this.#thinkingExpected("redacted_thinking");
        this.#closeOpen();
        this.#blocks.push(
          create(ContentBlockSchema, { block: { case: "redactedThinking", value: { data: e.value.data } } }),
        );
        return;
      case "toolCallStart": {
        this.#terminal("toolCallStart");
        const { id, name } = e.value;
        if (!id || this.#calls.has(id))
          throw this.#violation(StreamRule.toolCallIdUnique, `tool call id "${id}" is empty or reused`);
        if (!this.#opts.model.supportsToolUse)
          this.#warnings.push(`tool call from ${this.#opts.model.id}, which declares no tool use`);
        this.#closeOpen();
        const callId = this.#opts.newToolCallId?.() ?? id;
        this.#calls.set(id, { name, callId, index: this.#blocks.length, fragments: [], done: false });
        this.#blocks.push(
          create(ContentBlockSchema, {
            block: {
              case: "toolUse",
              value: { id: callId, name, input: {}, ...(callId !== id ? { vendorId: id } : {}) },
            },
          }),
        );
        return;
      }
      case "toolCallDelta": {
        this.#terminal("toolCallDelta");
        const call = this.#call(e.value.id);
        call.fragments.push(e.value.argumentsFragment);
        return;
      }
      case "toolCallDone": {
        this.#terminal("toolCallDone");
        this.#finishCall(e.value.id, this.#call(e.value.id));
        return;
      }
    }
  }

  /** Ends accumulation (stream closed) and returns the completion; idempotent. */
  finish(): AccumulatedCompletion {
    if (this.#finished) return this.#finished;
    this.#closeOpen();
    for (const [id, call] of this.#calls) {
      if (!call.done) {
        this.#warnings.push(`tool call "${id}" never received tool_call_done`);
        this.#finishCall(id, call);
      }
    }
    const message = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: this.#blocks,
      id: this.#opts.newMessageId(),
      producedByModelId: this.#opts.model.id,
      producedByProvider: this.#opts.provider,
    });
    const cost = this.#usage.reduce((sum, r) => addDecimals(sum, decimalFromNumber(r.costUsd)), {
      numerator: 0n,
      scale: 0,
    });
    this.#finished = {
      message,
      ...(this.#stop ? { stop: this.#stop } : {}),
      ...(this.#error ? { error: this.#error } : {}),
      ...(this.#requestId !== undefined ? { providerRequestId: this.#requestId } : {}),
      ...(this.#metadata ? { metadata: this.#metadata } : {}),
      safetyNotices: this.#notices,
      usage: this.#usage,
      costUsd: decimalToNumber(cost),
      invalidToolCalls: this.#invalid,
      complete: this.#stop !== undefined || this.#error !== undefined,
      warnings: this.#warnings,
    };
    return this.#finished;
  }

  #finishCall(id: string, call: ToolCallState): void {
    if (call.done) throw this.#violation(StreamRule.toolCallOpen, `tool call "${id}" finished twice`);
    call.done = true;
    const raw = call.fragments.join("");
    let parsed: unknown;
    let problem: string | undefined;
    if (raw.trim() === "") parsed = {};
    else {
      try {
        parsed = JSON.parse(raw);
      } catch (err) {
        problem = `not valid JSON (${(err as Error).message})`;
      }
    }
    if (problem === undefined && (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))) {
      problem = "not a JSON object";
    }
    // Kept out of the message: a value the wire cannot carry would break every later request.
    problem ??= argumentDepthProblem(parsed);
    const block = this.#blocks[call.index]!.block;
    if (problem === undefined) {
      if (block.case === "toolUse") block.value.input = parsed as JsonObject;
      return;
    }
    this.#invalid.push({
      id: call.callId,
      name: call.name,
      error: create(ToolErrorSchema, {
        category: ToolErrorCategory.INVALID_ARGUMENTS,
        message: `the arguments of ${call.name} (call ${call.callId}) are ${problem}; the call was not run`,
        retryable: false,
        details: { raw },
      }),
    });
  }

  #call(id: string): ToolCallState {
    const call = this.#calls.get(id);
    if (!call) throw this.#violation(StreamRule.toolCallKnown, `tool call "${id}" was never started`);
    if (call.done) throw this.#violation(StreamRule.toolCallOpen, `tool call "${id}" already finished`);
    return call;
  }

  #append(kind: "text" | "thinking", text: string): void {
    if (text === "") return;
    const start = kind === "text" ? this.#textStart : undefined;
    if (this.#open?.kind !== kind || start) {
      this.#closeOpen();
      this.#openBlock(kind, start?.vendorState);
    }
    this.#open!.parts.push(text);
  }

  #openBlock(kind: "text" | "thinking", vendorState?: Uint8Array): OpenBlock {
    const index = this.#blocks.length;
    this.#blocks.push(
      create(ContentBlockSchema, {
        block:
          kind === "text"
            ? { case: "text", value: { text: "", ...(vendorState !== undefined ? { vendorState } : {}) } }
            : { case: "thinking", value: { text: "" } },
      }),
    );
    this.#open = { kind, index, parts: [] };
    return this.#open;
  }

  #closeOpen(): void {
    // A started text block that never received text is dropped with whatever closes it.
    this.#textStart = undefined;
    const open = this.#open;
    if (!open) return;
    const block = this.#blocks[open.index]!.block;
    if (block.case === "text" || block.case === "thinking") block.value.text = open.parts.join("");
    this.#open = undefined;
  }

  #terminal(what: string): void {
    if (this.#error) throw this.#violation(StreamRule.contentAfterTerminal, `${what} after an error event`);
    if (this.#stop) throw this.#violation(StreamRule.contentAfterTerminal, `${what} after the stop event`);
  }

  #thinkingExpected(what: string): void {
    if (!this.#opts.model.thinking?.supported) {
      this.#warnings.push(
        `${what} from ${this.#opts.model.id}, which declares no thinking support; kept verbatim`,
      );
    }
  }

  #violation(rule: string, message: string): ProtocolViolationError {
    return new ProtocolViolationError(this.#opts.provider, rule, message);
  }
}
