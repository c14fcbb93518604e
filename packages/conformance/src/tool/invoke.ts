// Invoke checks: stream shape (exactly one terminal event, nothing after it, exit_status
// at most once), output_schema conformance of results, classified errors for bad calls,
// and no sensitive configuration value in anything the plugin sends back.
import type { JsonObject } from "@bufbuild/protobuf";
import { toJsonString } from "@bufbuild/protobuf";
import type { ValidatedToolset } from "@pluggableharness/kernel/domain";
import {
  type GetSchemaResponse,
  ToolErrorCategory,
  type ToolEvent,
  ToolEventSchema,
  ToolKind,
} from "@pluggableharness/protocol/tool";
import type { CheckContext, SampleCall } from "../runner.ts";
import { sampleArguments } from "./args.ts";
import { type CapturedResult, deadlineFor, nextCallId, SESSION_ID } from "./calls.ts";
import { checkPreviewOnce } from "./preview-render.ts";
import { categoryName, describeOutcome, type InvokeRun, runInvoke } from "./stream.ts";

/** Sensitive configuration values (4+ characters) that must never come back. */
export function secretsOf(ctx: CheckContext, response: GetSchemaResponse): string[] {
  return (response.configSchema?.attributes ?? [])
    .filter((a) => a.sensitive)
    .map((a) => ctx.config[a.name])
    .filter((v): v is string => typeof v === "string" && v.length >= 4);
}

function leaks(events: readonly ToolEvent[], secrets: readonly string[]): boolean {
  if (secrets.length === 0) return false;
  const text = events.map((e) => toJsonString(ToolEventSchema, e)).join("\n");
  const decoded = events
    .map((e) => (e.event.case === "outputChunk" ? new TextDecoder().decode(e.event.value.data) : ""))
    .join("");
  return secrets.some((s) => text.includes(s) || decoded.includes(s));
}

/** Problems with a finished run, judged against an optional expectation. */
export function judge(run: InvokeRun, expect: string | undefined, secrets: readonly string[]): string[] {
  const problems = [...run.violations];
  if (run.transportError) problems.push(`the stream failed: ${run.transportError}`);
  if (run.timedOut) problems.push("no terminal event before the deadline");
  if (leaks(run.events, secrets)) problems.push("an event contains a sensitive configuration value");
  const o = run.outcome;
  if (o && expect) {
    if (expect === "result" && o.kind !== "result")
      problems.push(`expected a result, got ${describeOutcome(run)}`);
    else if (expect === "error" && o.kind !== "error") problems.push("expected an error, got a result");
    else if (expect !== "result" && expect !== "error") {
      if (o.kind !== "error" || categoryName(o.error.category) !== expect) {
        problems.push(`expected error ${expect}, got ${describeOutcome(run)}`);
      }
    }
  }
  return problems;
}

export async function checkInvocations(
  ctx: CheckContext,
  response: GetSchemaResponse,
  toolset: ValidatedToolset | undefined,
): Promise<CapturedResult[]> {
  const secrets = secretsOf(ctx, response);
  const captured: CapturedResult[] = [];
  const invoke = (toolName: string, args: JsonObject) =>
    runInvoke(ctx.host, {
      callId: nextCallId(),
      tool: toolset?.tools.get(toolName),
      toolName,
      arguments: args,
      workingDirectory: ctx.workingDirectory,
      sessionId: SESSION_ID,
      deadlineMs: deadlineFor(response.tools.find((t) => t.name === toolName)),
    });

  // An operation the provider does not have: a classified error, not a hang or a crash.
  {
    const run = await runInvoke(ctx.host, {
      callId: nextCallId(),
      tool: undefined,
      toolName: "__conformance_no_such_operation__",
      arguments: {},
      workingDirectory: ctx.workingDirectory,
      sessionId: SESSION_ID,
      deadlineMs: 10_000,
    });
    const last = run.events.at(-1)?.event;
    const ok =
      !run.transportError &&
      !run.timedOut &&
      run.events.length === 1 &&
      last?.case === "error" &&
      last.value.category !== ToolErrorCategory.UNSPECIFIED &&
      last.value.category !== ToolErrorCategory.PROCESS_CRASHED;
    ctx.record(
      "tool.invoke.unknown-operation",
      ok ? "pass" : "fail",
      ok && last?.case === "error"
        ? `error ${categoryName(last.value.category)}`
        : `expected exactly one classified error event, got ${
            run.transportError ??
            run.events
              .map((e) =>
                e.event.case === "error" ? `error ${categoryName(e.event.value.category)}` : e.event.case,
              )
              .join(", ")
          }`,
    );
  }

  for (const schema of response.tools) {
    const required = schema.inputSchema?.required ?? [];
    const id = `tool.invoke.${schema.name}`;
    if (required.length === 0) {
      ctx.record(`${id}.invalid-arguments`, "skip", "input_schema requires nothing");
    } else {
      const args = sampleArguments(schema.inputSchema);
      delete args[required[0]!];
      const run = await invoke(schema.name, args);
      const problems = judge(run, "invalid_arguments", secrets);
      ctx.record(
        `${id}.invalid-arguments`,
        problems.length ? "fail" : "pass",
        problems.length ? problems.join("; ") : `missing "${required[0]}" is reported as invalid_arguments`,
      );
    }
  }

  const sampled = new Set<string>();
  const counters = new Map<string, number>();
  for (const sample of ctx.samples) {
    sampled.add(sample.tool);
    if (sample.cancel) continue; // the cancellation checks run these
    const n = (counters.get(sample.tool) ?? 0) + 1;
    counters.set(sample.tool, n);
    if (response.previewSupported.includes(sample.tool)) {
      // Preview exactly what is about to be applied, and check it changes nothing.
      await checkPreviewOnce(
        ctx,
        `tool.preview.${sample.tool}.sample-${n}`,
        sample.tool,
        sample.arguments,
        sample.expect === "result",
      );
    }
    const run = await invoke(sample.tool, sample.arguments);
    const problems = judge(run, sample.expect, secrets);
    recordRun(ctx, `tool.invoke.${sample.tool}.sample-${n}`, run, problems);
    if (run.outcome?.kind === "result")
      captured.push({ tool: sample.tool, payload: run.outcome.payload, run });
  }

  for (const schema of response.tools) {
    if (sampled.has(schema.name)) continue;
    const id = `tool.invoke.${schema.name}.synthesized`;
    if (schema.kind === ToolKind.RESOURCE) {
      ctx.record(id, "skip", "resources are only invoked through samples (they may change things)");
      continue;
    }
    const run = await invoke(schema.name, sampleArguments(schema.inputSchema));
    recordRun(ctx, id, run, judge(run, undefined, secrets));
    if (run.outcome?.kind === "result")
      captured.push({ tool: schema.name, payload: run.outcome.payload, run });
  }
  return captured;
}

function recordRun(ctx: CheckContext, id: string, run: InvokeRun, problems: string[]): void {
  if (problems.length) {
    ctx.record(id, "fail", problems.join("; "));
    return;
  }
  const shape = run.events.map((e) => e.event.case).join(" > ");
  ctx.record(
    id,
    run.warnings.length ? "warn" : "pass",
    `${shape}: ${describeOutcome(run)}${run.warnings.length ? `; ${run.warnings.join("; ")}` : ""}`,
  );
}

export function samplesFor(ctx: CheckContext, tool: string): SampleCall[] {
  return ctx.samples.filter((s) => s.tool === tool);
}
