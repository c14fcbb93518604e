// End-to-end prompt caching: the real `agent` binary and Anthropic plugin against the
// Anthropic fake with prefix-match cache billing. A tool loop must read each step's whole
// previous prompt back from the cache (the kernel marks the conversation tail), and the
// session's cost must be what the vendor bills.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [], validate: true, promptCache: true });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

// claude-sonnet-5, USD per million tokens (providers/anthropic/src/catalog.ts).
const RATE = { input: 2, write: 2.5, read: 0.2, output: 10 };
const STEPS = 8;

describe("conversation prompt caching", () => {
  it("each tool step reads the previous prompt from the cache, and the ledger is the vendor's bill", async () => {
    const repo = sb.repo();
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace("max_turns = 10", "max_turns = 30");
    writeFileSync(join(repo, "agent.hcl"), hcl);
    for (let i = 0; i < STEPS; i++) {
      fake.push({
        kind: "tool_calls",
        text: `Step ${i}.`,
        calls: [{ name: "filesystem__read_file", args: { path: i % 2 === 0 ? "calc.js" : "test.js" } }],
      });
    }
    fake.push({ kind: "text", text: "Read everything." });
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const r = await agent(["run", "-p", "Read the files", "--output-format", "stream-json"], {
      cwd: repo,
      env,
      timeoutMs: 90_000,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const sent = fake.requests.filter((q) => !q.rejected);
    expect(fake.requests.filter((q) => q.rejected)).toEqual([]);
    expect(sent).toHaveLength(STEPS + 1);

    const bills = sent.map((q) => q.billed!);
    // The first request writes its whole prompt; every later one reads the previous prompt
    // back in full and pays the full input rate on nothing.
    expect(bills[0]!.cacheWriteTokens).toBe(bills[0]!.totalTokens);
    for (let i = 1; i < bills.length; i++) {
      expect(bills[i]!.cacheReadTokens, `step ${i}`).toBeGreaterThanOrEqual(bills[i - 1]!.totalTokens);
      expect(bills[i]!.inputTokens, `step ${i}`).toBe(0);
    }
    // The conversation is marked, within the vendor's limit of four markers.
    const last = sent.at(-1)!.json as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    expect(last.messages.at(-1)!.content.some((b) => b["cache_control"] !== undefined)).toBe(true);

    // The session's cost is exactly what those bills cost.
    const billed = bills.reduce(
      (sum, b) =>
        sum +
        (b.inputTokens * RATE.input +
          (b.cacheWriteTokens + b.cacheWriteLongTokens) * RATE.write +
          b.cacheReadTokens * RATE.read +
          (b.outputTokens + b.reasoningTokens) * RATE.output) /
          1e6,
      0,
    );
    const result = records(r.stdout).find((rec) => rec["type"] === "result")!;
    expect(result["total_cost_usd"] as number).toBeCloseTo(billed, 12);
    // And well under what the same prompts cost uncached.
    const uncached = bills.reduce(
      (sum, b) => sum + (b.totalTokens * RATE.input + b.outputTokens * RATE.output) / 1e6,
      0,
    );
    expect(billed).toBeLessThan(uncached * 0.5);
  });
});
