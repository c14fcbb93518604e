// Steps 3-4 of RunTurn: route the turn to a model of the profile's chain, stream the
// completion (forwarding text and reasoning deltas to frontends as they arrive),
// accumulate it, and recover per ModelError category:
// - rate_limited / overloaded: retried with exponential backoff and jitter (settings.retry),
//   never sooner than retry_after and never later than settings.max_retry_delay_ms (a
//   longer retry_after is cut to it and reported); then the next eligible candidate;
// - process_crashed: retried once (the runtime relaunches the plugin), then the chain;
// - invalid_request flagged model_not_found (the vendor does not serve that id): never
//   retried, the next candidate of the chain, and the candidate is skipped for the rest
//   of the session;
// - auth_error, invalid_request, context_length_exceeded, content_filtered, unknown:
//   never retried and never masked by a fallback: the turn fails with that category.
// An error the plugin marks not retryable (x-should-retry: false, an unreachable server, a
// request larger than the rate limit) is not retried; the chain may still fall back.
// Stalls are bounded: an attempt that delivers no event for settings.stream_idle_timeout_ms
// is cut and counts as overloaded, and the call's waiting for an answer to begin, summed
// over its attempts and retry waits, ends at settings.max_model_wait_ms (model-wait.ts).
// The run's wall-clock deadline cuts an attempt and any retry wait that would end after
// it (a "bound" result; docs/decisions/reliability.md, "Never hang: bounded stalls, no orphans, validate = run").
// An attempt that was billed before it failed is persisted as its own message event.

import { create, type JsonObject } from "@bufbuild/protobuf";
import { credentialVariables, type GenerationParamsConfig } from "@pluggableharness/config";
import type { ContextSection, Message } from "@pluggableharness/protocol/content";
import { type UsageRecord, UsageRecordSchema } from "@pluggableharness/protocol/event";
import { StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import {
  type GenerationParams,
  GenerationParamsSchema,
  type ModelSpec,
  PricingSchema,
  SafetyKind,
  type StreamCompletionRequest,
  StreamCompletionRequestSchema,
  ToolChoiceMode,
  type ToolDeclaration,
  UsageSchema,
} from "@pluggableharness/protocol/model";
import { TextStyle } from "@pluggableharness/protocol/render";
import {
  type AccumulatedCompletion,
  assertContentSupported,
  ClassifiedModelError,
  checkStreamCompletionRequest,
  classifyGrpcStatus,
  contentNeeds,
  fallbackTokenCount,
  modelErrorReaction,
  type PreviousRequestPrefix,
  ProtocolViolationError,
  placeCacheBreakpoints,
  precompilePayloadSchema,
  recordUsage,
  StreamAccumulator,
  timestampFromMillis,
  unmetNeeds,
  utf8ByteLength,
  withVendorToolCallIds,
} from "../../domain/index.ts";
import type { LoadedProvider } from "../../plugins/providers.ts";
import { ProviderCallError, ProviderUnavailableError } from "../../providers/ports.ts";
import { traceAttempt } from "../../telemetry/genai.ts";
import type { LoopDeps } from "../deps.ts";
import type { ModelCandidate, TurnContext, TurnPorts } from "../ports.ts";
import { declaredToolName } from "../tool-registry.ts";
import { fitRequestImages, type ImageFitNote, newNotes } from "./image-fit.ts";
import { firstNoticeMs, ModelWait } from "./model-wait.ts";
import { publishNotice } from "./notice.ts";
import { type RetryWait, retryDelayMs, retryWait } from "./retry-wait.ts";

export type { ModelCandidate, RetryWait };
export { retryDelayMs, retryWait };

export interface ResolvedCandidate {
  readonly index: number;
  readonly provider: LoadedProvider;
  readonly spec: ModelSpec;
  readonly params?: GenerationParams;
  readonly providerOptions?: JsonObject;
}

/**
 * What a session's model calls carry from one request to the next: the retry budget of the
 * run, and the previous request's tool list and prefix (cache breakpoints start from them).
 */
export class ModelCallState {
  /** Retries this run spent on failed model attempts (bounded by limits.maxSessionRetries). */
  retriesUsed = 0;
  /** The fingerprint of the tool list the previous request declared. */
  previousToolsFingerprint: string | undefined;
  /** The previous model request's prefix, for conversation cache breakpoints. */
  previousRequest: PreviousRequestPrefix | undefined;
  /**
   * "<provider>/<model>" candidates the vendor said it does not serve (model_not_found),
   * with its message: routing skips them for the rest of the session.
   */
  readonly unavailable = new Map<string, string>();

  /** A run starts with its whole retry budget. */
  startRun(): void {
    this.retriesUsed = 0;
  }

  /** The conversation's prefix changed (a compaction): breakpoints start over. */
  prefixChanged(): void {
    this.previousRequest = undefined;
  }
}

/** What a model call knows of its session (a turn's context, or a summary call's). */
export type ModelCallContext = Pick<TurnContext, "sessionId" | "workingDirectory">;

/** What a model call writes through: live events, failed attempts, the tools a streamed call names. */
export type ModelCallPorts = Pick<TurnPorts, "sink" | "messages" | "registry">;

export interface ModelCallInput {
  readonly turnId: string;
  readonly candidates: readonly ModelCandidate[];
  /**
   * The turn's routing decision (step 1): the first attempt goes to its candidate. The
   * chain is routed again only to fall back, from the candidate after the one that failed.
   */
  readonly route: RouteResult & { readonly chosen: ResolvedCandidate };
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDeclaration[];
  readonly sections: readonly ContextSection[];
  readonly previousToolsFingerprint?: string;
  /** The session's previous model request (conversation-tail cache breakpoints). */
  readonly previousRequest?: PreviousRequestPrefix;
  readonly signal: AbortSignal;
  /** When waiting for the model must end (the run's wall-clock bound), in clock ms. */
  readonly deadline?: number;
  /** Stream nothing to frontends (a compaction summary is not the assistant speaking). */
  readonly quiet?: boolean;
}

export type ModelCallResult =
  | {
      readonly kind: "ok";
      readonly completion: AccumulatedCompletion;
      readonly candidate: ResolvedCandidate;
      readonly request: StreamCompletionRequest;
    }
  | {
      readonly kind: "cancelled";
      readonly completion?: AccumulatedCompletion;
      readonly candidate?: ResolvedCandidate;
    }
  | { readonly kind: "failed"; readonly category: string; readonly message: string }
  | {
      /** The deadline came while waiting for the model (streaming, or before a retry). */
      readonly kind: "bound";
      readonly detail: string;
      readonly completion?: AccumulatedCompletion;
      readonly candidate?: ResolvedCandidate;
    };

/** GenerationParams from a profile candidate's agent.hcl attributes. */
export function paramsFromConfig(p: GenerationParamsConfig): GenerationParams | undefined {
  if (Object.keys(p).length === 0) return undefined;
  return create(GenerationParamsSchema, {
    ...(p.thinking_effort !== undefined ? { thinkingEffort: p.thinking_effort } : {}),
    ...(p.thinking_budget_tokens !== undefined
      ? { thinkingBudgetTokens: BigInt(p.thinking_budget_tokens) }
      : {}),
    ...(p.max_output_tokens !== undefined ? { maxOutputTokens: BigInt(p.max_output_tokens) } : {}),
    ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
    ...(p.top_p !== undefined ? { topP: p.top_p } : {}),
    ...(p.top_k !== undefined ? { topK: BigInt(p.top_k) } : {}),
    ...(p.stop_sequences !== undefined ? { stopSequences: p.stop_sequences } : {}),
    ...(p.tool_choice !== undefined ? { toolChoice: toolChoiceFromConfig(p.tool_choice) } : {}),
  });
}

const TOOL_CHOICE_MODES = {
  auto: ToolChoiceMode.AUTO,
  any: ToolChoiceMode.ANY,
  none: ToolChoiceMode.NONE,
} as const;

/** A profile's tool_choice on the wire: a specific tool by the name the model sees. */
function toolChoiceFromConfig(c: NonNullable<GenerationParamsConfig["tool_choice"]>) {
  if (c.mode !== "specific") return { mode: TOOL_CHOICE_MODES[c.mode] };
  return { mode: ToolChoiceMode.SPECIFIC, toolName: declaredToolName(c.provider, c.tool) };
}

/**
 * The profile's parameters for one request: its tool_choice applies only to a request that
 * offers tools, and a specific tool only while that tool is offered (a final turn offers
 * none; plan mode withholds resources), so the constraint never makes a request invalid.
 */
function paramsForRequest(
  params: GenerationParams | undefined,
  toolNames: readonly string[],
): GenerationParams | undefined {
  const choice = params?.toolChoice;
  if (!params || !choice) return params;
  const offered =
    toolNames.length > 0 &&
    (choice.mode !== ToolChoiceMode.SPECIFIC || toolNames.includes(choice.toolName ?? ""));
  if (offered) return params;
  const { toolChoice: _dropped, ...rest } = params;
  return create(GenerationParamsSchema, rest);
}

/** The fallback estimate of a request's input size (history, context sections, tools). */
export function estimateInputTokens(
  messages: readonly Message[],
  sections: readonly ContextSection[],
  tools: readonly ToolDeclaration[],
): bigint {
  // The bytes of all messages summed, then divided once: the estimate of their joined text.
  let bytes = 0;
  for (const m of messages) bytes += messageBytes(m);
  let total = Math.ceil(bytes / 4);
  for (const s of sections) total += Number(s.tokens);
  for (const t of tools)
    total += fallbackTokenCount(JSON.stringify({ n: t.name, d: t.description })).count + 50;
  return BigInt(total);
}

/**
 * The UTF-8 bytes of the text a message adds to the estimate, kept per message: the whole
 * history is estimated several times a turn, and a message in it is never changed (a
 * rewrite replaces it).
 */
const estimatedBytes = new WeakMap<Message, number>();

function messageBytes(m: Message): number {
  let bytes = estimatedBytes.get(m);
  if (bytes !== undefined) return bytes;
  let text = "";
  for (const b of m.content) {
    const v = b.block;
    if (v.case === "text" || v.case === "thinking") text += v.value.text;
    else if (v.case === "toolUse") text += JSON.stringify(v.value.input ?? {}) + v.value.name;
    else if (v.case === "toolResult") {
      for (const c of v.value.content) if (c.block.case === "text") text += c.block.value.text;
    }
  }
  bytes = utf8ByteLength(text);
  estimatedBytes.set(m, bytes);
  return bytes;
}

export interface RouteResult {
  readonly chosen?: ResolvedCandidate;
  readonly skipped: string[];
  /**
   * Without a chosen candidate: "invalid_request" when every model of the chain that could
   * be asked was refused for content it cannot take (images without vision, documents
   * without document support): the request itself is wrong for this chain, per the seed's
   * content rules. Otherwise "routing_exhausted".
   */
  readonly category?: "invalid_request" | "routing_exhausted";
}

/**
 * The first candidate from `start` on that can serve the turn, with the reasons others
 * could not. Traced as "model.route" when a turn asks (once per turn, plus once per fallback).
 */
export function routeCandidates(
  deps: LoopDeps,
  candidates: readonly ModelCandidate[],
  start: number,
  needs: { inputTokens: bigint; messages: readonly Message[]; tools: readonly ToolDeclaration[] },
  /** Candidates known not to exist at their vendor ("<provider>/<model>" -> why). */
  unavailable?: ReadonlyMap<string, string>,
  turn?: { readonly sessionId: string; readonly turnId: string },
): RouteResult {
  if (turn) deps.trace({ name: "model.route", ...turn, attrs: { start } });
  const skipped: string[] = [];
  const content = contentNeeds(needs.messages, needs.tools.length);
  let asked = 0;
  let refusedContent = 0;
  for (let i = start; i < candidates.length; i++) {
    const c = candidates[i]!;
    const provider = deps.providers.get(c.provider);
    const spec = provider?.models?.models.get(c.modelId);
    if (!provider || !spec) {
      skipped.push(`${c.provider}/${c.modelId}: not available (provider or model not loaded)`);
      continue;
    }
    const gone = unavailable?.get(`${c.provider}/${c.modelId}`);
    if (gone !== undefined) {
      skipped.push(`${c.provider}/${c.modelId}: the vendor does not serve this model (${gone})`);
      continue;
    }
    const toolNames = needs.tools.map((t) => t.name);
    const wanted = paramsForRequest(c.params, toolNames);
    const { reasons, params } = unmetNeeds(spec, {
      inputTokens: needs.inputTokens,
      toolUse: content.toolUse,
      vision: content.vision,
      documents: content.documents,
      ...(wanted ? { params: wanted } : {}),
      toolNames,
    });
    if (reasons.length > 0) {
      skipped.push(`${c.provider}/${c.modelId}: ${reasons.join("; ")}`);
      asked++;
      if ((content.vision && !spec.supportsVision) || (content.documents && !spec.supportsDocuments))
        refusedContent++;
      continue;
    }
    return {
      chosen: {
        index: i,
        provider,
        spec,
        ...(params.params ? { params: params.params } : {}),
        ...(c.providerOptions ? { providerOptions: c.providerOptions } : {}),
      },
      skipped,
    };
  }
  return {
    skipped,
    category: asked > 0 && refusedContent === asked ? "invalid_request" : "routing_exhausted",
  };
}

/** vendor_code of an attempt the kernel cut because it delivered nothing for too long. */
export const STALL_CODE = "stream_idle_timeout";

type AttemptOutcome =
  | { kind: "ok"; completion: AccumulatedCompletion }
  | { kind: "cancelled"; completion: AccumulatedCompletion }
  | { kind: "bound"; completion: AccumulatedCompletion }
  | {
      kind: "error";
      error: ClassifiedModelError;
      completion?: AccumulatedCompletion;
      /** The plugin reported the error (an error event, a gRPC status), not the kernel's cut. */
      reported?: boolean;
    };

export async function callModel(
  deps: LoopDeps,
  ctx: ModelCallContext,
  ports: ModelCallPorts,
  state: ModelCallState,
  input: ModelCallInput,
): Promise<ModelCallResult> {
  const log = deps.log.child("model");
  let start = 0;
  let attemptNo = 0;
  let lastError: ClassifiedModelError | undefined;
  /** The vendor request id of the last failed attempt (stream_start), when it had one. */
  let lastRequestId: string | undefined;
  // A retry skipped because its wait would end after the deadline.
  let cutWait: { delayMs: number; leftMs: number } | undefined;
  const leftMs = () =>
    input.deadline === undefined ? Number.POSITIVE_INFINITY : input.deadline - deps.clock.now();
  const waiting = new ModelWait(deps.settings.max_model_wait_ms);
  for (;;) {
    const route: RouteResult =
      start === 0
        ? input.route
        : routeCandidates(
            deps,
            input.candidates,
            start,
            {
              inputTokens: estimateInputTokens(input.messages, input.sections, input.tools),
              messages: input.messages,
              tools: input.tools,
            },
            state.unavailable,
            { sessionId: ctx.sessionId, turnId: input.turnId },
          );
    if (!route.chosen && cutWait) {
      return {
        kind: "bound",
        detail: `${lastError ? `${lastError.category}: ${lastError.message}; ` : ""}the vendor asked to wait ${seconds(cutWait.delayMs)} s before a retry, and only ${Math.max(0, Math.floor(cutWait.leftMs / 1000))} s were left`,
      };
    }
    if (!route.chosen) {
      if (lastError) {
        return {
          kind: "failed",
          category: lastError.category,
          message: `${lastError.message}${requestIdNote(lastRequestId)} (no further model in the chain can serve this turn${route.skipped.length ? `: ${route.skipped.join("; ")}` : ""})`,
        };
      }
      return {
        kind: "failed",
        category: route.category ?? "routing_exhausted",
        message: `no model in the chain can serve this turn: ${route.skipped.join("; ") || "the chain is empty"}`,
      };
    }
    const candidate = route.chosen;
    for (const s of route.skipped) log.info(`skipped model candidate ${s}`, undefined, ctx.sessionId);

    let request: StreamCompletionRequest;
    try {
      assertContentSupported(candidate.spec, {
        messages: [...input.messages],
        assembledContext: [...input.sections],
        tools: [...input.tools],
      });
      request = create(StreamCompletionRequestSchema, {
        messages: [...input.messages],
        modelId: candidate.spec.id,
        tools: [...input.tools],
        ...(candidate.params ? { params: candidate.params } : {}),
        ...(candidate.providerOptions ? { providerOptions: candidate.providerOptions } : {}),
        assembledContext: [...input.sections],
        callContext: {
          sessionId: ctx.sessionId,
          turnId: input.turnId,
          workingDirectory: ctx.workingDirectory,
        },
        cacheBreakpoints: placeCacheBreakpoints({
          caching: candidate.spec.caching,
          tools: [...input.tools],
          ...(input.previousToolsFingerprint !== undefined
            ? { previousToolsFingerprint: input.previousToolsFingerprint }
            : {}),
          // The same array the prefix record encodes after the call (its encoding is kept).
          assembledContext: input.sections,
          messages: input.messages,
          ...(input.previousRequest ? { previous: input.previousRequest } : {}),
        }),
      });
      checkStreamCompletionRequest(request, candidate.spec);
    } catch (err) {
      const e =
        err instanceof ClassifiedModelError
          ? err
          : new ClassifiedModelError("invalid_request", (err as Error).message);
      return { kind: "failed", category: e.category, message: e.message };
    }

    // What the plugin receives: images fitted to this model (the session keeps the
    // originals), and the vendor's own ids on its tool calls (ToolCall.id is the kernel's).
    const fitted = fitRequestImages(request.messages, candidate.spec);
    reportImageFits(ctx, ports, state, candidate, fitted.notes, log);
    const wire = create(StreamCompletionRequestSchema, {
      ...request,
      messages: withVendorToolCallIds(fitted.messages),
    });
    let retries = 0;
    for (;;) {
      if (leftMs() <= 0) return { kind: "bound", detail: "the time ran out before the model was called" };
      if (waiting.leftMs() <= 0) {
        const model = `${candidate.provider.name}/${candidate.spec.id}`;
        return {
          kind: "failed",
          category: lastError?.category ?? "overloaded",
          message: `${waiting.exhausted(model)}${lastError ? `; last error: ${lastError.message}` : ""}`,
        };
      }
      // Another kernel sharing this vendor may have been told to back off (fleet mode).
      if (deps.throttle) {
        await deps.throttle.wait(candidate.provider.name, input.signal);
        if (input.signal.aborted) return { kind: "cancelled", candidate };
      }
      attemptNo++;
      deps.trace({
        name: "model.attempt",
        sessionId: ctx.sessionId,
        turnId: input.turnId,
        attrs: { provider: candidate.provider.name, model: candidate.spec.id, attempt: attemptNo },
      });
      // Every attempt is in the cost ledger: one the vendor reported no usage for (cut, failed,
      // or a vendor that never reports it) carries the kernel's estimate, marked as such.
      const outcome = await traceAttempt(
        deps.telemetry,
        {
          provider: candidate.provider.name,
          system: candidate.provider.name,
          model: candidate.spec.id,
          attempt: attemptNo,
        },
        () =>
          attempt(deps, ctx, ports, candidate, wire, input, attemptNo, waiting).then((o) =>
            withAttemptUsage(deps, candidate, wire, o),
          ),
      );
      if (outcome.kind === "ok") return { kind: "ok", completion: outcome.completion, candidate, request };
      if (outcome.kind === "cancelled")
        return { kind: "cancelled", completion: outcome.completion, candidate };
      if (outcome.kind === "bound") {
        return {
          kind: "bound",
          detail: `the time ran out while waiting for ${candidate.provider.name}/${candidate.spec.id}`,
          completion: outcome.completion,
          candidate,
        };
      }
      const error = outcome.error;
      lastError = error;
      // Every failed attempt is recorded: its usage (reported or estimated) in the ledger, and
      // the vendor's request id, which is what its support asks for, in the file and the log.
      const requestId = outcome.completion?.providerRequestId;
      if (outcome.completion) {
        ports.messages.persistFailedAttempt(input.turnId, candidate, outcome.completion, error.category);
      }
      lastRequestId = requestId;
      const reaction = modelErrorReaction(error);
      if (error.modelNotFound) {
        // Remembered for the session: later turns go straight to the next candidate.
        state.unavailable.set(`${candidate.provider.name}/${candidate.spec.id}`, error.message);
      }
      log.warn(
        `model call failed: ${error.category}`,
        {
          provider: candidate.provider.name,
          model: candidate.spec.id,
          error: error.message,
          retries,
          retryable: error.retryable,
          ...(requestId ? { vendorRequestId: requestId } : {}),
        },
        ctx.sessionId,
      );
      if (waiting.leftMs() <= 0) {
        // The call waited all it may for an answer to begin: no retry, no other candidate.
        const model = `${candidate.provider.name}/${candidate.spec.id}`;
        const why = error.message.includes(waiting.exhausted(model))
          ? error.message
          : `${waiting.exhausted(model)}; last error: ${error.message}`;
        return { kind: "failed", category: error.category, message: why + requestIdNote(requestId) };
      }
      if (!reaction.retrySameRequest && !reaction.fallback) {
        return {
          kind: "failed",
          category: error.category,
          message: error.message + authHint(deps, candidate, error) + requestIdNote(requestId),
        };
      }
      const perCall = reaction.maxRetries ?? deps.settings.retry.max_retries;
      // The plugin's word on retryability wins (x-should-retry: false, a refused connection).
      if (
        reaction.retrySameRequest &&
        error.retryable &&
        retries < perCall &&
        state.retriesUsed < deps.limits.maxSessionRetries
      ) {
        const wait: RetryWait =
          error.category === "process_crashed"
            ? { delayMs: 0, capped: false }
            : retryWait(deps, retries, error.retryAfterSeconds);
        const delay = wait.delayMs;
        if (error.category === "rate_limited") {
          deps.throttle?.rateLimited(candidate.provider.name, wait.askedMs ?? delay);
        }
        if (delay >= waiting.leftMs()) {
          const model = `${candidate.provider.name}/${candidate.spec.id}`;
          return {
            kind: "failed",
            category: error.category,
            message: `${waiting.exhausted(model)}; last error: ${error.message}${requestIdNote(requestId)}`,
          };
        }
        const left = leftMs();
        if (delay >= left) {
          // Waiting would outlast the deadline: another candidate may still serve in time.
          cutWait = { delayMs: wait.askedMs ?? delay, leftMs: left };
          break;
        }
        retries++;
        state.retriesUsed++;
        deps.telemetry.add("agent.model.retries", 1, {
          "gen_ai.request.model": candidate.spec.id,
          "error.type": error.category,
        });
        // A vendor asking for longer than the kernel waits is told no, and so is the operator.
        const cappedNote =
          wait.capped && wait.askedMs !== undefined && wait.askedMs > delay
            ? `the vendor asked to wait ${seconds(wait.askedMs)} s, waiting at most ${seconds(delay)} s (settings.max_retry_delay_ms); `
            : "";
        if (cappedNote) {
          log.warn(
            "retry-after cut to settings.max_retry_delay_ms",
            {
              provider: candidate.provider.name,
              model: candidate.spec.id,
              askedMs: wait.askedMs ?? 0,
              waitMs: delay,
            },
            ctx.sessionId,
          );
        }
        if (error.category === "rate_limited" || error.category === "overloaded") {
          // Frontends show it in their status line (top bar) while the kernel waits.
          const what =
            error.category === "rate_limited"
              ? "rate limited"
              : error.vendorCode === STALL_CODE
                ? "stalled"
                : "overloaded";
          publishNotice(
            ports.sink,
            `${candidate.provider.name}/${candidate.spec.id} is ${what}; ${cappedNote}retry ${retries} of ${perCall} in ${Math.ceil(delay / 1000)}s`,
            TextStyle.WARNING,
          );
        }
        await deps.clock.sleep(delay, input.signal);
        waiting.add(delay);
        if (input.signal.aborted) return { kind: "cancelled", candidate };
        continue;
      }
      break; // next candidate
    }
    start = candidate.index + 1;
  }
}

async function attempt(
  deps: LoopDeps,
  ctx: ModelCallContext,
  ports: ModelCallPorts,
  candidate: ResolvedCandidate,
  request: StreamCompletionRequest,
  input: ModelCallInput,
  attemptNo: number,
  waiting: ModelWait,
): Promise<AttemptOutcome> {
  const acc = new StreamAccumulator({
    provider: candidate.provider.name,
    model: candidate.spec,
    clock: () => timestampFromMillis(deps.clock.now()),
    newMessageId: () => deps.newId(),
    newToolCallId: () => deps.newId(),
  });
  const targetId = `${input.turnId}.${attemptNo}`;
  const end = deps.tracker.begin(candidate.provider.name, ctx.sessionId, "model");
  const controller = new AbortController();
  const onAbort = () => controller.abort(input.signal.reason);
  input.signal.addEventListener("abort", onAbort, { once: true });
  let violation: ClassifiedModelError | undefined;
  let first = true;
  // Real timers, not the injected clock: they bound real waits on a real process.
  const idleMs = deps.settings.stream_idle_timeout_ms;
  const model = `${candidate.provider.name}/${candidate.spec.id}`;
  let cut: "idle" | "deadline" | "waited" | undefined;
  let idle: NodeJS.Timeout | undefined;
  // Before the first event the attempt is waiting: at most what is left of the call's total.
  const began = Date.now();
  const arm = (paused = false) => {
    clearTimeout(idle);
    if (paused) return;
    const left = first ? waiting.leftMs() - (Date.now() - began) : Number.POSITIVE_INFINITY;
    const total = left < idleMs;
    idle = setTimeout(
      () => {
        cut ??= total ? "waited" : "idle";
        controller.abort();
      },
      Math.max(0, total ? left : idleMs),
    );
  };
  // While nothing has come, the status line says what is waited for, and for how long.
  let noticeIn = firstNoticeMs(idleMs);
  let notice: NodeJS.Timeout | undefined;
  let noticeShown = false;
  const statusLine = (text: string) => publishNotice(ports.sink, text);
  const scheduleNotice = () => {
    notice = setTimeout(() => {
      if (!first || input.quiet) return;
      noticeShown = true;
      statusLine(waiting.notice(model, waiting.waitedMs + (Date.now() - began)));
      noticeIn *= 2;
      scheduleNotice();
    }, noticeIn);
  };
  scheduleNotice();
  const firstEventArrived = () => {
    clearTimeout(notice);
    waiting.add(Date.now() - began);
    // The answer began: the waiting notice is over (an empty status line clears it).
    if (noticeShown) statusLine("");
  };
  const deadline =
    input.deadline === undefined
      ? undefined
      : setTimeout(
          () => {
            cut ??= "deadline";
            controller.abort();
          },
          Math.max(0, input.deadline - deps.clock.now()),
        );
  arm();
  const gaveUp = (): ClassifiedModelError =>
    new ClassifiedModelError("overloaded", `no data from ${model}: ${waiting.exhausted(model)}`, {
      retryable: false,
      vendorCode: STALL_CODE,
    });
  const stalled = (): ClassifiedModelError =>
    new ClassifiedModelError(
      "overloaded",
      `no data from ${candidate.provider.name}/${candidate.spec.id} for ${idleMs / 1000} s ${first ? "before its answer began" : "mid-answer"}; the stalled stream was cut`,
      { retryable: true, vendorCode: STALL_CODE },
    );
  let streamedText = false;
  let pendingBreak = false;
  try {
    for await (const event of candidate.provider.ports.model.streamCompletion(request, {
      signal: controller.signal,
    })) {
      // A vendor holding output back for review says so: that silence is expected.
      if (first) {
        first = false;
        firstEventArrived();
        deps.trace({ name: "model.first_event", sessionId: ctx.sessionId, turnId: input.turnId });
        deps.telemetry.record("agent.model.ttft", (Date.now() - began) / 1000, {
          "gen_ai.request.model": model,
        });
      }
      // A vendor holding output back for review says so: that silence is expected.
      arm(event.event.case === "safetyNotice" && event.event.value.kind === SafetyKind.BUFFERING);
      try {
        acc.push(event);
      } catch (err) {
        if (!(err instanceof ProtocolViolationError)) throw err;
        violation = new ClassifiedModelError("unknown", err.message, { retryable: false });
        break;
      }
      const e = event.event;
      if (e.case === "toolCallStart") {
        // Work the call will need is started while the rest of the answer streams in: the
        // input-schema validator compiles, and a provider still dormant launches (a failed
        // launch here is retried by the call itself).
        const tool = ports.registry.get(e.value.name);
        if (tool) {
          setImmediate(precompilePayloadSchema, tool.tool.inputJsonSchema);
          deps.providers.activate(tool.provider.name).catch(() => {});
        }
      } else if (e.case === "textDelta" && (e.value.text || e.value.startsBlock)) {
        // A new text block of the same answer (e.g. commentary, then the final answer) is
        // set apart on screen as it is in the message.
        if (e.value.startsBlock && streamedText) pendingBreak = true;
        if (!e.value.text) continue;
        const text = pendingBreak ? `\n\n${e.value.text}` : e.value.text;
        pendingBreak = false;
        streamedText = true;
        if (input.quiet) continue;
        ports.sink.publish({
          event: { case: "streamDelta", value: { targetId, text, kind: StreamDeltaKind.TEXT } },
        });
      } else if (e.case === "thinkingDelta" && e.value.text && !input.quiet) {
        ports.sink.publish({
          event: {
            case: "streamDelta",
            value: { targetId, text: e.value.text, kind: StreamDeltaKind.THINKING },
          },
        });
      }
    }
  } catch (err) {
    if (input.signal.aborted) return { kind: "cancelled", completion: acc.finish() };
    if (cut === "deadline") return { kind: "bound", completion: acc.finish() };
    if (cut === "idle") return { kind: "error", error: stalled(), completion: acc.finish() };
    if (cut === "waited") return { kind: "error", error: gaveUp(), completion: acc.finish() };
    if (err instanceof ProviderUnavailableError && err.reason === "crashed") {
      // Kernel-synthesised, so not read through fromProto (which treats a plugin-sent one as a breach).
      const error = new ClassifiedModelError("process_crashed", err.message, { retryable: true });
      return { kind: "error", error, completion: acc.finish() };
    }
    if (err instanceof ProviderCallError) {
      const c = classifyGrpcStatus({ code: err.code, message: err.details });
      if (c instanceof ClassifiedModelError)
        return { kind: "error", error: c, completion: acc.finish(), reported: true };
      return { kind: "cancelled", completion: acc.finish() };
    }
    return {
      kind: "error",
      error: new ClassifiedModelError("unknown", (err as Error).message, { retryable: false }),
      completion: acc.finish(),
    };
  } finally {
    clearTimeout(idle);
    clearTimeout(notice);
    // An attempt that never began answering waited all along.
    if (first) waiting.add(Date.now() - began);
    clearTimeout(deadline);
    input.signal.removeEventListener("abort", onAbort);
    end();
    deps.trace({ name: "model.stream_end", sessionId: ctx.sessionId, turnId: input.turnId });
  }
  if (input.signal.aborted) return { kind: "cancelled", completion: acc.finish() };
  if (cut === "deadline") return { kind: "bound", completion: acc.finish() };
  if (cut === "idle") return { kind: "error", error: stalled(), completion: acc.finish() };
  if (cut === "waited") return { kind: "error", error: gaveUp(), completion: acc.finish() };
  const completion = acc.finish();
  if (violation) return { kind: "error", error: violation, completion };
  if (completion.error) return { kind: "error", error: completion.error, completion, reported: true };
  if (!completion.complete) {
    return {
      kind: "error",
      error: new ClassifiedModelError(
        "unknown",
        "the completion stream ended without a stop or error event",
        {
          retryable: false,
        },
      ),
      completion,
    };
  }
  return { kind: "ok", completion };
}

/** UTF-8 bytes of what an attempt streamed back: text, reasoning and tool-call arguments. */
function streamedBytes(message: Message): number {
  let bytes = 0;
  for (const b of message.content) {
    const v = b.block;
    if (v.case === "text" || v.case === "thinking") bytes += Buffer.byteLength(v.value.text, "utf8");
    else if (v.case === "toolUse") bytes += Buffer.byteLength(JSON.stringify(v.value.input ?? {}), "utf8");
    else if (v.case === "redactedThinking") bytes += v.value.data.length;
  }
  return bytes;
}

/**
 * The attempt's outcome with a usage record the ledger can carry. A completion with usage
 * the vendor reported is kept as it is. Without one, the kernel records its estimate,
 * marked `estimated` and priced like reported usage: zero for a request the vendor refused
 * with an error before answering (vendors do not bill those); otherwise (the kernel cut it
 * on a stall, an interrupt or the deadline, the plugin crashed, the vendor failed
 * mid-answer, or never reports usage) the request's estimated size as input and what
 * streamed as output. The estimate errs on the side of counting: a budget must not be
 * outrun by attempts nobody reported.
 */
function withAttemptUsage(
  deps: LoopDeps,
  candidate: ResolvedCandidate,
  request: StreamCompletionRequest,
  outcome: AttemptOutcome,
): AttemptOutcome {
  const completion = outcome.completion;
  if (!completion || completion.usage.length > 0) return outcome;
  const refused =
    outcome.kind === "error" && outcome.reported === true && completion.message.content.length === 0;
  const usage = create(UsageSchema, {
    inputTokens: refused
      ? 0n
      : estimateInputTokens(request.messages, request.assembledContext, request.tools),
    outputTokens: refused ? 0n : BigInt(Math.ceil(streamedBytes(completion.message) / 4)),
  });
  const receivedAt = timestampFromMillis(deps.clock.now());
  let record: UsageRecord;
  try {
    record = recordUsage(usage, candidate.spec.pricing ?? create(PricingSchema), receivedAt);
  } catch {
    // A model whose pricing cannot price it (no tier): the attempt is still on record.
    record = create(UsageRecordSchema, { usage, costUsd: 0, receivedAt, pricingTierIndex: -1 });
  }
  record.estimated = true;
  return { ...outcome, completion: { ...completion, usage: [record], costUsd: record.costUsd } };
}

/**
 * Logs what fitting did to a request's images, once per image and session; an image that
 * could not be sent is also shown to the operator (a warning notice).
 */
function reportImageFits(
  ctx: ModelCallContext,
  ports: ModelCallPorts,
  state: ModelCallState,
  candidate: ResolvedCandidate,
  notes: readonly ImageFitNote[],
  log: LoopDeps["log"],
): void {
  for (const n of newNotes(state, notes)) {
    const fields = { provider: candidate.provider.name, model: candidate.spec.id };
    if (n.kind === "fitted") {
      log.info(n.text, fields, ctx.sessionId);
      continue;
    }
    log.warn(n.text, fields, ctx.sessionId);
    // A notice, like a retry's: a headless run prints it on stderr.
    publishNotice(ports.sink, n.text, TextStyle.WARNING);
  }
}

/** Whole seconds of a wait, for messages ("unbounded" for an infinite retry-after). */
function seconds(ms: number): string {
  return Number.isFinite(ms) ? String(Math.ceil(ms / 1000)) : "an unbounded number of";
}

/** The vendor's request id, for the failure a user reads (and quotes to the vendor's support). */
function requestIdNote(requestId: string | undefined): string {
  return requestId ? ` [vendor request id ${requestId}]` : "";
}

/** On an auth failure: which environment variable holds the key the vendor rejected. */
function authHint(
  deps: LoopDeps,
  candidate: ResolvedCandidate,
  error: { readonly category: string },
): string {
  if (error.category !== "auth_error") return "";
  const name = candidate.provider.name;
  const vars = credentialVariables(deps.config.providers.find((p) => p.name === name));
  if (vars.length === 0) return "";
  return ` (${name} rejected the key in ${vars.join(" / ")}: check that variable)`;
}
