// Exact token counts are asked of the model provider once per (provider, model, text):
// the next CountTokens for the same text is answered from the cache, which also survives
// the kernel (a file) but never holds the text itself, and forgets counts that are old.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { CountTokensRequestSchema } from "@pluggableharness/protocol/kernel";
import type { CallbackContext, CallbackPeer } from "@pluggableharness/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { InvocationTracker } from "../../src/callbacks/invocations.ts";
import { callbackImplementation } from "../../src/callbacks/service.ts";
import { TokenCountCache } from "../../src/callbacks/token-counts.ts";
import { discardLog, KernelLogger } from "../../src/log.ts";
import type { ProviderRegistry } from "../../src/plugins/providers.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-token-counts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A registry holding one model provider whose CountTokens is counted. */
function fakeProviders(version = "1.0.0") {
  const asked: string[] = [];
  const provider = {
    name: "model",
    resolved: { source: "pluggableharness/anthropic", version },
    producers: { model: { name: "anthropic", version } },
    models: { models: new Map([["m1", {}]]) },
    ports: {
      model: {
        countTokens: async (req: { text: string }) => {
          asked.push(req.text);
          return { count: BigInt(req.text.length) };
        },
      },
    },
  };
  const registry = { get: (name: string) => (name === "model" ? provider : undefined) };
  return { asked, registry: registry as unknown as ProviderRegistry };
}

function service(registry: ProviderRegistry, cache: TokenCountCache | undefined) {
  const peer: CallbackPeer = { plugin: "ctx", instance: 1, pid: 1, producers: new Map() };
  return callbackImplementation(
    {
      session: () => undefined,
      tracker: new InvocationTracker(),
      providers: () => registry,
      log: new KernelLogger(discardLog, "test", "error"),
      kernelProducer: { $typeName: "pluggableharness.common.v1.ProducerRef" } as never,
      ...(cache ? { tokenCounts: cache } : {}),
    },
    peer,
  );
}

const request = (text: string, modelId = "m1") =>
  create(CountTokensRequestSchema, {
    content: [{ block: { case: "text", value: { text } } }],
    modelRef: { provider: "model", id: modelId },
  });
const ctx = { signal: new AbortController().signal } as unknown as CallbackContext;

describe("cached exact token counts", () => {
  it("asks the provider once per text and answers repeats from the cache, still exact", async () => {
    const { asked, registry } = fakeProviders();
    const svc = service(registry, new TokenCountCache());
    const count = (text: string) =>
      (svc.countTokens as (r: unknown, c: CallbackContext) => Promise<{ count: bigint; exact: boolean }>)(
        request(text),
        ctx,
      );
    expect(await count("static instructions")).toEqual({ count: 19n, exact: true });
    expect(await count("static instructions")).toEqual({ count: 19n, exact: true });
    expect(await count("other")).toEqual({ count: 5n, exact: true });
    expect(asked).toEqual(["static instructions", "other"]);

    // Without a cache every count is asked for.
    const uncached = fakeProviders();
    const plain = service(uncached.registry, undefined);
    await (plain.countTokens as (r: unknown, c: CallbackContext) => Promise<unknown>)(request("x"), ctx);
    await (plain.countTokens as (r: unknown, c: CallbackContext) => Promise<unknown>)(request("x"), ctx);
    expect(uncached.asked).toEqual(["x", "x"]);
  });

  it("keys by provider version and model: another version asks again", async () => {
    const cache = new TokenCountCache();
    const a = fakeProviders("1.0.0");
    const b = fakeProviders("2.0.0");
    const call = (registry: ProviderRegistry) =>
      (service(registry, cache).countTokens as (r: unknown, c: CallbackContext) => Promise<unknown>)(
        request("same text"),
        ctx,
      );
    await call(a.registry);
    await call(b.registry);
    await call(a.registry);
    expect([a.asked.length, b.asked.length]).toEqual([1, 1]);
    expect(TokenCountCache.key("p", "m1", "t")).not.toBe(TokenCountCache.key("p", "m2", "t"));
  });

  it("persists counts without the text, and drops counts older than its horizon", () => {
    const file = join(dir, "counts.json");
    let now = Date.UTC(2026, 0, 1);
    const first = new TokenCountCache(file, () => now);
    const key = TokenCountCache.key("p@1", "m1", "a secret-looking sentence");
    first.set(key, 7);
    first.flush();
    expect(readFileSync(file, "utf8")).not.toContain("secret-looking");

    expect(new TokenCountCache(file, () => now).get(key)).toBe(7);
    now += 30 * 24 * 60 * 60 * 1000;
    expect(new TokenCountCache(file, () => now).get(key)).toBeUndefined();
  });

  it("an unreadable file is an empty cache", () => {
    const file = join(dir, "broken.json");
    const c = new TokenCountCache(file);
    c.set("k", 1);
    c.flush();
    rmSync(file);
    expect(new TokenCountCache(file).get("k")).toBeUndefined();
    expect(new TokenCountCache(join(dir, "missing", "x.json")).size).toBe(0);
  });
});
