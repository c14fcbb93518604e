// A state machine fed the ToolEvents of one Invoke stream. It enforces the ordering rules
// (exactly one terminal event, nothing after it, exit_status at most once), the strict
// output_schema check and the ban on plugin-emitted process_crashed, and turns any breach
// into an `unknown` ToolError the model can be shown.
//
// Decision: whether an operation is process-backed (and so may emit exit_status) is not
// declared anywhere in ToolSchema, so the kernel cannot enforce "exit_status only for the
// exec family"; it enforces "at most once" and "never after the terminal event".
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  type ToolError,
  ToolErrorCategory,
  ToolErrorSchema,
  type ToolEvent,
  type ToolEvent_ExitStatus,
} from "@pluggableharness/protocol/tool";
import { checkPayload } from "./payload-validation.ts";
import type { ValidatedTool } from "./tool-schema.ts";

export const InvokeStreamRule = {
  eventSet: "event-set",
  singleTerminal: "single-terminal",
  nothingAfterTerminal: "nothing-after-terminal",
  exitStatusAtMostOnce: "exit-status-at-most-once",
  terminalRequired: "terminal-required",
  outputSchema: "output-schema",
  processCrashedKernelOnly: "process-crashed-kernel-only",
  errorClassified: "error-classified",
  intermediateNeedsStreaming: "intermediate-events-need-streaming",
  unknownNeedsDetails: "unknown-error-needs-details",
} as const;

export interface InvokeStreamIssue {
  readonly rule: string;
  readonly message: string;
}

export type InvokeOutcome =
  | { readonly kind: "result"; readonly payload: JsonObject; readonly exitStatus?: ToolEvent_ExitStatus }
  | { readonly kind: "error"; readonly error: ToolError; readonly exitStatus?: ToolEvent_ExitStatus };

export class InvokeStreamValidator {
  readonly #tool: ValidatedTool;
  #terminal: InvokeOutcome | undefined;
  #exitStatus: ToolEvent_ExitStatus | undefined;
  readonly #violations: InvokeStreamIssue[] = [];
  readonly #warnings: InvokeStreamIssue[] = [];

  constructor(tool: ValidatedTool) {
    this.#tool = tool;
  }

  /** Protocol breaches so far; any breach turns the outcome into an `unknown` error. */
  get violations(): readonly InvokeStreamIssue[] {
    return this.#violations;
  }

  /** Deviations from SHOULD/UX-hint rules that do not change the outcome. */
  get warnings(): readonly InvokeStreamIssue[] {
    return this.#warnings;
  }

  /** The terminal event has been seen: the caller may stop reading. */
  get closed(): boolean {
    return this.#terminal !== undefined;
  }

  /** Feeds one event. Returns false when the event breaks the protocol. */
  push(event: ToolEvent): boolean {
    const e = event.event;
    if (this.#terminal) {
      const what = e.case ?? "an empty event";
      return this.#violate(
        e.case === "result" || e.case === "error"
          ? InvokeStreamRule.singleTerminal
          : InvokeStreamRule.nothingAfterTerminal,
        `${what} arrived after the terminal event`,
      );
    }
    switch (e.case) {
      case undefined:
        return this.#violate(InvokeStreamRule.eventSet, "an event with no variant set");
      case "outputChunk":
      case "progress":
      case "partialResult":
        if (!this.#tool.schema.streaming) {
          this.#warnings.push({
            rule: InvokeStreamRule.intermediateNeedsStreaming,
            message: `${e.case} from an operation declaring streaming: false`,
          });
        }
        return true;
      case "exitStatus":
        if (this.#exitStatus)
          return this.#violate(InvokeStreamRule.exitStatusAtMostOnce, "exit_status arrived twice");
        this.#exitStatus = e.value;
        return true;
      case "result": {
        const payload = e.value.payload ?? {};
        const check = checkPayload(this.#tool.outputJsonSchema, payload);
        if (!check.ok) {
          this.#violations.push({
            rule: InvokeStreamRule.outputSchema,
            message: `result payload does not match output_schema: ${check.errors.join("; ")}`,
          });
        }
        this.#terminal = { kind: "result", payload };
        return check.ok;
      }
      case "error": {
        this.#terminal = { kind: "error", error: e.value };
        if (e.value.category === ToolErrorCategory.PROCESS_CRASHED) {
          return this.#violate(
            InvokeStreamRule.processCrashedKernelOnly,
            "a plugin reported process_crashed about itself",
          );
        }
        if (e.value.category === ToolErrorCategory.UNSPECIFIED || !(e.value.category in ToolErrorCategory)) {
          return this.#violate(InvokeStreamRule.errorClassified, "the error has no category");
        }
        if (e.value.category === ToolErrorCategory.UNKNOWN && !e.value.details) {
          this.#warnings.push({
            rule: InvokeStreamRule.unknownNeedsDetails,
            message: "unknown error without the raw error in details",
          });
        }
        return true;
      }
    }
  }

  /**
   * The call's outcome once the stream has ended. A stream without a terminal event, or
   * with any breach, yields an `unknown`, non-retryable ToolError naming the breaches.
   */
  finish(): InvokeOutcome {
    if (!this.#terminal) {
      this.#violate(InvokeStreamRule.terminalRequired, "the stream ended without a result or error");
    }
    const exit = this.#exitStatus ? { exitStatus: this.#exitStatus } : {};
    if (this.#violations.length > 0) {
      const provider = this.#tool.provider;
      const op = this.#tool.schema.name;
      const details: JsonObject = {
        violations: this.#violations.map((v) => ({ rule: v.rule, message: v.message })),
      };
      const t = this.#terminal;
      if (t?.kind === "error")
        details["reported_error"] = { category: t.error.category, message: t.error.message };
      return {
        kind: "error",
        error: create(ToolErrorSchema, {
          category: ToolErrorCategory.UNKNOWN,
          message: `${provider}.${op} broke the tool protocol: ${this.#violations.map((v) => v.message).join("; ")}`,
          retryable: false,
          details,
        }),
        ...exit,
      };
    }
    return { ...this.#terminal!, ...exit };
  }

  #violate(rule: string, message: string): false {
    this.#violations.push({ rule, message });
    return false;
  }
}
