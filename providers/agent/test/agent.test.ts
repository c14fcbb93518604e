// The agent provider as a plugin process (the conformance harness's recording kernel
// answers RunSession as each test says): its schema follows the configured profiles, a
// spawn passes the call's id and the profile on, and the child's outcome becomes the
// result or error the parent model reads.
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let h: ToolHarness;

const final = (text: string) => ({
  role: 2,
  content: [{ block: { case: "text" as const, value: { text } } }],
});

beforeAll(async () => {
  h = new ToolHarness({ executable: MAIN, name: "agent" });
  await h.configure({ profiles: { explorer: "reads code", writer: "changes files" } });
});
afterAll(() => h.close());

describe("agent.spawn_subagent", () => {
  it("declares a spawn-capable resource whose profiles come from the configuration", async () => {
    const schema = await h.client.getSchema({});
    expect(schema.operationsFromConfig).toBe(true);
    const t = schema.tools[0]!;
    expect([t.name, t.kind, t.risk]).toEqual(["spawn_subagent", ToolKind.RESOURCE, RiskClass.MODERATE]);
    expect(t.spawns?.profileField).toBe("profile");
    expect(t.concurrency).toMatchObject({ safe: true, keyFields: [] });
    const profile = t.inputSchema!.properties.find((p) => p.name === "profile")!;
    expect(profile.schema!.enum.map((v) => v.kind.value)).toEqual(["explorer", "writer"]);
    expect(t.description).toContain("- explorer: reads code");
    expect(await h.configureErrors({ profiles: { "bad name": "x" } })).toEqual(["Invalid profile name"]);
    await h.configure({ profiles: { explorer: "reads code", writer: "changes files" } });
  });

  it("runs the child through RunSession with the call's id and returns its final answer", async () => {
    h.kernel.runSession = (req) => ({
      sessionId: "01CHILD0000000000000000000",
      status: SessionStatus.COMPLETED,
      finalMessage: final(`did: ${req.prompt}`),
      totalCostUsd: 0.25,
      totalInputTokens: 100n,
      totalOutputTokens: 20n,
      denials: [{ sessionId: "01CHILD0000000000000000000", tool: "filesystem.write_file", reason: "denied" }],
    });
    const run = await h.invoke(
      "spawn_subagent",
      { profile: "explorer", prompt: "look around" },
      { callId: "c-7" },
    );
    const req = h.kernel.runSessions.at(-1)!;
    expect([req.profile, req.prompt, req.toolCallId]).toEqual(["explorer", "look around", "c-7"]);
    expect(req.parentSessionId).toBe("01TESTSESSION0000000000000");
    expect(run.result).toMatchObject({
      session_id: "01CHILD0000000000000000000",
      status: "completed",
      cost_usd: 0.25,
      input_tokens: 100,
      output_tokens: 20,
    });
    expect(String(run.result!["answer"])).toContain("did: look around");
    expect(String(run.result!["answer"])).toContain(
      "[the sub-agent was refused filesystem.write_file: denied]",
    );
  });

  it("a failed child is the call's error; a bound-stopped one is a result saying so", async () => {
    h.kernel.runSession = () => ({ sessionId: "01C", status: SessionStatus.FAILED, detail: "model crashed" });
    const failed = await h.invoke("spawn_subagent", { profile: "explorer", prompt: "x" });
    expect(failed.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect(failed.error?.message).toContain("model crashed");
    h.kernel.runSession = () => ({
      sessionId: "01C",
      status: SessionStatus.ERROR_MAX_TURNS,
      finalMessage: final("partial"),
      detail: "max_turns",
    });
    const bounded = await h.invoke("spawn_subagent", { profile: "explorer", prompt: "x" });
    expect(bounded.result?.["status"]).toBe("error_max_turns");
    expect(String(bounded.result?.["answer"])).toMatch(/partial[\s\S]*stopped early: error_max_turns/);
  });

  it("refuses a profile it does not offer before asking the kernel", async () => {
    const before = h.kernel.runSessions.length;
    const run = await h.invoke("spawn_subagent", { profile: "root", prompt: "x" });
    expect(run.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect(h.kernel.runSessions.length).toBe(before);
  });

  it("a kernel refusal is the call's error", async () => {
    h.kernel.runSession = undefined;
    const run = await h.invoke("spawn_subagent", { profile: "explorer", prompt: "x" });
    expect(run.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect(run.error?.message).toContain("the kernel refused the sub-agent");
  });
});
