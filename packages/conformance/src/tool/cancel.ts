// Cancellation: the kernel cancels the Invoke stream. The plugin must treat that as
// ordinary control flow (stay healthy, not crash) and, for a resource, report what had
// happened. A cancelled gRPC stream carries nothing more, so the report travels
// through KernelCallbackService.Log with fields.call_id naming the call.

import type { ValidatedToolset } from "@pluggableharness/kernel/domain";
import type { GetSchemaResponse } from "@pluggableharness/protocol/tool";
import { ToolKind, ToolService } from "@pluggableharness/protocol/tool";
import type { CheckContext } from "../runner.ts";
import { deadlineFor, nextCallId, SESSION_ID } from "./calls.ts";
import { runInvoke } from "./stream.ts";

const REPORT_WAIT_MS = 3_000;
const HEALTH_WAIT_MS = 2_000;

export async function checkCancellation(
  ctx: CheckContext,
  response: GetSchemaResponse,
  toolset: ValidatedToolset | undefined,
): Promise<void> {
  const samples = ctx.samples.filter((s) => s.cancel);
  if (samples.length === 0) {
    ctx.record("tool.cancel", "skip", "no sample marked cancel");
    return;
  }
  let n = 0;
  for (const sample of samples) {
    n++;
    const id = `tool.cancel.${sample.tool}.sample-${n}`;
    const schema = response.tools.find((t) => t.name === sample.tool);
    const callId = nextCallId();
    const crashesBefore = ctx.host.crashCount;
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    if (sample.cancelAfterMs !== undefined) timer = setTimeout(() => ac.abort(), sample.cancelAfterMs);
    const t0 = Date.now();
    const run = await runInvoke(ctx.host, {
      callId,
      tool: toolset?.tools.get(sample.tool),
      toolName: sample.tool,
      arguments: sample.arguments,
      workingDirectory: ctx.workingDirectory,
      sessionId: SESSION_ID,
      deadlineMs: deadlineFor(schema),
      signal: ac.signal,
      onEvent: () => sample.cancelAfterMs === undefined,
    });
    clearTimeout(timer);
    const problems: string[] = [];
    if (run.outcome) {
      problems.push("the call finished before it could be cancelled; choose a longer-running sample");
    }
    if (run.transportError)
      problems.push(`the stream failed instead of being cancelled: ${run.transportError}`);
    problems.push(...run.violations);
    const healthy = await Promise.race([
      ctx.host
        .client(ToolService)
        .getSchema({}, { timeoutMs: HEALTH_WAIT_MS })
        .then(() => true)
        .catch(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(false), HEALTH_WAIT_MS + 500)),
    ]);
    if (!healthy) problems.push("the plugin did not answer GetSchema after the cancellation");
    if (ctx.host.crashCount !== crashesBefore) problems.push("the plugin crashed after the cancellation");
    let reportNote = "";
    if (schema?.kind === ToolKind.RESOURCE) {
      const report = await ctx.kernel.waitForLog((l) => l.fields["call_id"] === callId, REPORT_WAIT_MS);
      if (!report) {
        problems.push(
          `no cancellation report (a Log entry with fields.call_id = "${callId}") within ${REPORT_WAIT_MS} ms`,
        );
      } else {
        reportNote = `; reported: ${JSON.stringify(report.fields["report"] ?? report.message).slice(0, 300)}`;
      }
    }
    ctx.record(
      id,
      problems.length ? "fail" : "pass",
      problems.length
        ? problems.join("; ")
        : `cancelled after ${run.events.length} event(s), settled in ${Date.now() - t0} ms${reportNote}`,
    );
  }
}
