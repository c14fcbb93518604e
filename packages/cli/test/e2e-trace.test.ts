// End-to-end: AGENT_TRACE writes the kernel's per-step timeline of a headless run, the
// instrument behind the tool-dispatch figures in docs/decisions/performance.md.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("AGENT_TRACE", () => {
  it("records turn steps, the model attempt and each tool call with timestamps, in order", async () => {
    const repo = sb.repo();
    const traceFile = join(sb.home, "trace.jsonl");
    fake.push(
      {
        kind: "tool_calls",
        text: "Reading both.",
        calls: [
          { name: "filesystem__read_file", args: { path: "calc.js" } },
          { name: "filesystem__read_file", args: { path: "test.js" } },
        ],
      },
      { kind: "text", text: "Both read." },
    );
    const r = await agent(["run", "-p", "Read calc.js and test.js"], {
      cwd: repo,
      env: {
        ...sb.env,
        ANTHROPIC_API_KEY: "sk-ant-test",
        FAKE_ANTHROPIC_URL: fake.url,
        FIXTURE_ROOT: repo,
        AGENT_TRACE: traceFile,
      },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Both read.\n");

    const events = readFileSync(traceFile, "utf8")
      .trim()
      .split("\n")
      .map(
        (l) => JSON.parse(l) as { t: number; name: string; step?: string; attrs?: Record<string, unknown> },
      );
    const times = events.map((e) => e.t);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const label = (e: (typeof events)[number]) => (e.step ? `step ${e.step}` : e.name);
    const order = events.map(label);
    const at = (l: string) => order.indexOf(l);
    expect(at("model.attempt")).toBeGreaterThan(at("step 3"));
    expect(at("step 7")).toBeGreaterThan(at("model.stream_end"));
    const invoked = events.filter((e) => e.name === "tool.invoke");
    expect(invoked.map((e) => e.attrs?.["tool"])).toEqual(["filesystem.read_file", "filesystem.read_file"]);
    expect(at("tool.invoke")).toBeGreaterThan(at("step 9"));
    expect(order.lastIndexOf("tool.invoked")).toBeLessThan(at("step 13"));
    expect(fake.requests).toHaveLength(2);
  });
});
