// The prompt-cache keep-alive against the Anthropic fake with prefix-match cache billing:
// pings keep the cached prefix (thinking settings included) and generate as little as the
// API allows, and their usage reaches the next completion's stream (the cost ledger).
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { collect, launch, only, type RequestInit, text } from "@pluggableharness/model-provider-testing";
import { Role } from "@pluggableharness/protocol/content";
import type { PluginHost } from "@pluggableharness/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const KEY = "sk-ant-keepalive";
const MAIN = new URL("../src/main.ts", import.meta.url);
const SONNET = "claude-sonnet-4-6";

let fake: FakeVendor;
let host: PluginHost;
let client: Awaited<ReturnType<typeof launch>>["client"];

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "anthropic", validate: true, apiKey: KEY, promptCache: true });
  ({ host, client } = await launch("anthropic", MAIN));
  const res = await client.configure({
    config: { api_key: KEY, base_url: fake.url, cache_keepalive_seconds: 0.2, cache_keepalive_max_pings: 1 },
  });
  expect(res.result?.diagnostics).toEqual([]);
});

afterAll(async () => {
  await host?.shutdown();
  await fake?.close();
});

// Over Sonnet 4.6's 2048-token minimum, so the prefix is cacheable.
const SYSTEM = `You are terse. ${"Context line. ".repeat(900)}`;

const request = (init: Partial<RequestInit> = {}): RequestInit =>
  ({
    modelId: SONNET,
    messages: [{ role: Role.USER, id: "m0", content: [text(`Question. ${"detail ".repeat(1500)}`)] }],
    assembledContext: [{ provider: "ctx", label: "system", content: [text(SYSTEM)] }],
    cacheBreakpoints: [
      { position: { case: "afterAssembledContext", value: {} } },
      { position: { case: "afterMessageIndex", value: 0n } },
    ],
    callContext: { sessionId: "s", turnId: "t", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;

async function completeThenPing(init: Partial<RequestInit>, ...answers: Parameters<FakeVendor["push"]>) {
  fake.push(scenarios.text("answer"), ...answers);
  const n = fake.requests.length;
  await collect(client, request(init));
  const [real, ping] = (await fake.waitForRequests(n + 2)).slice(n);
  return { real: real!, ping: ping! };
}

describe("prompt-cache keep-alive", () => {
  it("without thinking, a ping is a max_tokens 0 pre-warm that reads the cache and generates nothing", async () => {
    const { real, ping } = await completeThenPing({});
    expect(ping.json).toMatchObject({ max_tokens: 0, stream: false });
    expect(ping.rejected).toBeUndefined();
    expect(ping.billed!.outputTokens + ping.billed!.reasoningTokens).toBe(0);
    expect(ping.billed!.cacheReadTokens).toBe(real.billed!.totalTokens);

    // The ping's bill arrives with the next completion, before that completion's own usage.
    fake.push(scenarios.text("next"));
    const { events } = await collect(client, request());
    const usages = only(events, "usage");
    expect(usages).toHaveLength(2);
    const pingUsage = usages[0]!;
    expect(pingUsage.components.map((c) => c.name)).toEqual(["keepalive_ping"]);
    expect(pingUsage.cacheReadTokens).toBe(BigInt(ping.billed!.cacheReadTokens));
    expect(pingUsage.outputTokens).toBe(0n);
    await fake.waitForRequests(fake.requests.length + 1); // that completion's own ping
  });

  it("with a thinking budget, a ping keeps the budget (the cached prefix) but bills at most one output token", async () => {
    const budget = { params: { thinkingBudgetTokens: 4096n, maxOutputTokens: 8192n } };
    // The ping's answer: a model that thinks through its whole budget when it may.
    const thinker = scenarios.thinking({ text: "x", usage: { reasoningTokens: 4000, outputTokens: 5 } });
    const { real, ping } = await completeThenPing(budget, thinker);
    expect(ping.rejected).toBeUndefined();
    const body = ping.json as Record<string, unknown>;
    expect(body["thinking"]).toEqual((real.json as Record<string, unknown>)["thinking"]);
    expect(body["max_tokens"]).toBe(1);
    expect(String(ping.headers["anthropic-beta"])).toContain("interleaved-thinking-2025-05-14");
    expect(ping.billed!.outputTokens + ping.billed!.reasoningTokens).toBeLessThanOrEqual(1);
    // Same thinking settings, so the cached messages are read, not just system.
    expect(ping.billed!.cacheReadTokens).toBe(real.billed!.totalTokens);
  });
});
