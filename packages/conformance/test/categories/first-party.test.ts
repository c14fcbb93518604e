// The first-party providers of the context, memory, hook, frontend, widget and
// slash-command categories pass their category's conformance checks, launched as
// processes over the go-plugin transport exactly as `agent conform` launches any plugin.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ConformanceReport, formatReport, runConformance } from "../../src/index.ts";

const main = (p: string) => fileURLToPath(new URL(`../../../../providers/${p}/src/main.ts`, import.meta.url));

let dir: string;
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ph-conform-categories-")));
  // Something for the context providers to contribute.
  writeFileSync(join(dir, "AGENTS.md"), "# Conventions\n\nIndent with two spaces.\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function conform(provider: string, config: JsonObject = {}): Promise<ConformanceReport> {
  const report = await runConformance({
    executable: main(provider),
    isolation: "process",
    workingDirectory: dir,
    config,
  });
  // The whole report on failure: which check, and why.
  expect(report.exitCode, formatReport(report)).toBe(0);
  expect(report.isolation).toBe("process");
  return report;
}

/** Checks that must have run and passed (not skipped or merely warned). */
function passed(report: ConformanceReport, ids: readonly string[]): void {
  const status = Object.fromEntries(report.results.map((r) => [r.id, r.status]));
  expect(Object.fromEntries(ids.map((id) => [id, status[id]]))).toEqual(
    Object.fromEntries(ids.map((id) => [id, "pass"])),
  );
}

it("context: project-context and the compactor", async () => {
  const project = await conform("project-context");
  expect(project.categories).toEqual(["context"]);
  passed(project, [
    "context.describe",
    "context.capabilities.declared",
    "context.contribute",
    "context.contribute.counted",
    "context.contribute.budget",
    "context.errors.invalid_request",
    "context.health",
  ]);
  const compactor = await conform("compactor");
  passed(compactor, [
    "context.capabilities.declared",
    "context.contribute",
    "context.errors.invalid_request",
  ]);
}, 60_000);

it("memory and hook: the memory provider", async () => {
  const report = await conform("memory", { store: "sqlite", global_dir: join(dir, "memory-global") });
  expect(report.categories).toEqual(expect.arrayContaining(["memory", "hook"]));
  passed(report, [
    "memory.capabilities.declared",
    "memory.record",
    "memory.audit",
    "memory.tokens",
    "memory.update",
    "memory.delete",
    "memory.recall",
    "memory.errors.not_found.get",
    "memory.errors.not_found.update",
    "memory.errors.not_found.delete",
    "memory.errors.invalid_type",
    "memory.errors.invalid_scope",
    "memory.ratification",
    "hook.observe.post_model_response",
    "hook.observe.session_end",
  ]);
}, 60_000);

it("widget and hook: the widgets provider", async () => {
  const report = await conform("widgets");
  expect(report.categories).toEqual(["widget", "hook"]);
  passed(report, [
    "widget.capabilities.declared",
    "widget.attach",
    "widget.attach.hook_driven",
    "widget.attach.cancel",
    "widget.errors.no_session",
    "hook.observe.post_model_response",
    "hook.observe.post_tool_call",
  ]);
}, 60_000);

it("frontend: the terminal UI and the web UI", async () => {
  for (const p of ["tui", "web-ui"]) {
    const report = await conform(p);
    expect(report.categories).toEqual(["frontend"]);
    passed(report, [
      "frontend.describe",
      "frontend.capabilities.declared",
      "frontend.configure.in_band",
      "frontend.configure.accepted",
    ]);
  }
}, 60_000);

it("slash commands: the commands provider", async () => {
  const report = await conform("commands");
  passed(report, ["slash.declared", "slash.command.model", "slash.command.plan", "slash.command.rewind"]);
}, 60_000);
