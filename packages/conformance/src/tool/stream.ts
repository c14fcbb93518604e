// Running one Invoke to its end (or a deadline) while the kernel's own stream rules
// (InvokeStreamValidator) judge every event.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type InvokeOutcome,
  InvokeStreamValidator,
  type ValidatedTool,
} from "@pluggableharness/kernel/domain";
import type { ToolEvent } from "@pluggableharness/protocol/tool";
import { ToolService } from "@pluggableharness/protocol/tool";
import type { PluginTransportHost } from "@pluggableharness/runtime";

export interface InvokeRun {
  events: ToolEvent[];
  outcome: InvokeOutcome | undefined;
  violations: string[];
  warnings: string[];
  /** The stream failed at the transport level (message) instead of ending. */
  transportError?: string;
  timedOut: boolean;
  /** Milliseconds from the call to its first event, if any. */
  firstEventMs?: number;
}

export interface InvokeSpec {
  callId: string;
  tool: ValidatedTool | undefined;
  toolName: string;
  arguments: JsonObject;
  workingDirectory: string;
  sessionId: string;
  deadlineMs: number;
  /** Called with each event; return true to cancel the call. */
  onEvent?: (event: ToolEvent, index: number) => boolean;
  signal?: AbortSignal;
}

export async function runInvoke(host: PluginTransportHost, spec: InvokeSpec): Promise<InvokeRun> {
  const validator = spec.tool ? new InvokeStreamValidator(spec.tool) : undefined;
  const events: ToolEvent[] = [];
  const started = Date.now();
  const run: InvokeRun = { events, outcome: undefined, violations: [], warnings: [], timedOut: false };
  const ac = new AbortController();
  const onOuter = () => ac.abort();
  spec.signal?.addEventListener("abort", onOuter, { once: true });
  const timer = setTimeout(() => {
    run.timedOut = true;
    ac.abort();
  }, spec.deadlineMs);
  let cancelledByUs = false;
  try {
    const stream = host.client(ToolService).invoke(
      {
        call: {
          id: spec.callId,
          toolName: spec.toolName,
          arguments: spec.arguments,
          callContext: {
            sessionId: spec.sessionId,
            turnId: "01CONFORMANCETURN000000000",
            workingDirectory: spec.workingDirectory,
          },
        },
      },
      { signal: ac.signal },
    );
    for await (const res of stream) {
      const ev = res.event;
      if (!ev) {
        run.violations.push("an InvokeResponse without an event");
        continue;
      }
      if (events.length === 0) run.firstEventMs = Date.now() - started;
      events.push(ev);
      validator?.push(ev);
      if (spec.onEvent?.(ev, events.length - 1)) {
        cancelledByUs = true;
        ac.abort();
      }
    }
  } catch (err) {
    if (!ac.signal.aborted || (!cancelledByUs && !run.timedOut && !spec.signal?.aborted)) {
      run.transportError = (err as Error).message;
    }
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener("abort", onOuter);
  }
  if (validator && !ac.signal.aborted && !run.transportError) {
    run.outcome = validator.finish();
    run.violations.push(...validator.violations.map((v) => `${v.message} [${v.rule}]`));
    run.warnings.push(...validator.warnings.map((v) => `${v.message} [${v.rule}]`));
  } else if (validator) {
    run.violations.push(...validator.violations.map((v) => `${v.message} [${v.rule}]`));
  }
  return run;
}

export function describeOutcome(run: InvokeRun): string {
  const o = run.outcome;
  if (!o)
    return run.timedOut ? "no terminal event before the deadline" : (run.transportError ?? "no outcome");
  return o.kind === "result" ? "result" : `error ${categoryName(o.error.category)}: ${o.error.message}`;
}

const CATEGORY_NAMES = [
  "unspecified",
  "invalid_arguments",
  "not_found",
  "permission_denied",
  "execution_failed",
  "timeout",
  "concurrency_conflict",
  "cancelled",
  "process_crashed",
  "unknown",
];

export function categoryName(category: number): string {
  return CATEGORY_NAMES[category] ?? `category ${category}`;
}
