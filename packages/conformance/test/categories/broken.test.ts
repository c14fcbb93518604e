// The context, memory, frontend, widget, hook and slash-command checks catch a plugin
// that breaks each category's rules, and name every violation.
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { runConformance } from "../../src/index.ts";

it("reports each violation of a plugin broken in every category and exits 1", async () => {
  const report = await runConformance({
    executable: fileURLToPath(new URL("./fixtures/broken-categories.ts", import.meta.url)),
  });
  const failed = new Set(report.results.filter((r) => r.status === "fail").map((r) => r.id));
  const reason = (id: string) => report.results.find((r) => r.id === id)?.reason ?? "";
  expect(report.exitCode).toBe(1);
  expect(report.categories.sort()).toEqual(["context", "frontend", "hook", "memory", "widget"]);
  const expected = [
    // Every category: "v2" is not a semantic version.
    ...["context", "memory", "frontend", "widget", "hook"].map((c) => `${c}.describe`),
    "context.capabilities.declared",
    "context.capabilities.config_schema",
    "context.configure.no_echo",
    "context.contribute",
    "context.contribute.counted",
    "context.contribute.budget",
    "context.errors.invalid_request",
    "memory.capabilities.declared",
    "memory.record",
    "memory.audit",
    "memory.delete",
    "memory.recall",
    "memory.errors.not_found.get",
    "memory.errors.not_found.update",
    "memory.errors.not_found.delete",
    "memory.ratification",
    "frontend.capabilities.declared",
    "frontend.configure.in_band",
    "widget.attach",
    "widget.errors.no_session",
    "hook.observe.post_tool_call",
    "hook.transform",
    "hook.veto",
    "slash.command.two words",
    "slash.command.dup",
  ];
  expect([...expected].filter((id) => !failed.has(id))).toEqual([]);
  expect(reason("context.contribute")).toMatch(/no label.*image.*exceed.*rewritten_history/s);
  expect(reason("context.capabilities.declared")).toMatch(/default_token_budget.*stability/);
  expect(reason("memory.record")).toMatch(/PENDING although ratification_supported is false/);
  expect(reason("memory.recall")).toMatch(/PENDING.*relevance_score outside \[0, 1\]/s);
  expect(reason("memory.errors.not_found.get")).toMatch(/INTERNAL, not NOT_FOUND/);
  expect(reason("frontend.configure.in_band")).toMatch(/INTERNAL instead of answering with diagnostics/);
  expect(reason("widget.attach")).toMatch(/TOP_BAR, which is not declared.*no content/s);
  expect(reason("widget.errors.no_session")).toMatch(/streamed 1 updates for no session/);
  expect(reason("hook.observe.post_tool_call")).toMatch(/answered with veto \(invalid_response\)/);
  expect(reason("hook.transform")).toMatch(/holds sessionEnd, not postToolCall/);
  expect(reason("hook.veto")).toMatch(/without an allow or deny decision/);
  expect(reason("slash.command.two words")).toMatch(
    /cannot be typed.*"nothing" is not one of this plugin's operations/,
  );
  const dup = report.results.filter((r) => r.id === "slash.command.dup").map((r) => r.reason);
  expect(dup).toEqual([
    expect.stringMatching(/without a template/),
    expect.stringMatching(/declared twice.*no dispatch/),
  ]);
  // Health is kept: the plugin broke rules, it did not crash.
  expect(failed.has("context.health")).toBe(false);
}, 60_000);
