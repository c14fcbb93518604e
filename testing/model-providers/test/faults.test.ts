// Vendor faults, for every first-party model provider as a real plugin process against its
// loopback fake: an HTML, empty or garbage 200 is an invalid response (not retried, not
// "overloaded"); a refused connection says "cannot reach <url>" and is not retried; a reset
// is a retryable transport failure; x-should-retry: false is honoured; a request larger
// than the per-minute token budget is not retried. Stalls are bounded by the kernel's idle
// timeout (testing/integration bounded-stalls.test.ts); here a stalled call ends as soon as
// it is cancelled.
import { type FakeVendor, scenarios, startFakeVendor, unreachableUrl } from "@pluggableharness/fake-vendors";
import { Role } from "@pluggableharness/protocol/content";
import { ModelErrorCategory } from "@pluggableharness/protocol/model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, errorOf, type Launched, launch, type RequestInit, text } from "../src/index.ts";

interface ProviderCase {
  readonly name: string;
  readonly vendor: "anthropic" | "openai-responses" | "gemini" | "xai" | "ollama";
  readonly model: string;
  readonly config: (baseUrl: string) => Record<string, unknown>;
  /** The base URL the provider is given for a fake at `url`. */
  readonly base: (url: string) => string;
}

const KEY = "sk-faults-test-key";
const PROVIDERS: ProviderCase[] = [
  {
    name: "anthropic",
    vendor: "anthropic",
    model: "claude-haiku-4-5-20251001",
    config: (b) => ({ api_key: KEY, base_url: b }),
    base: (u) => u,
  },
  {
    name: "openai",
    vendor: "openai-responses",
    model: "gpt-5.4-mini",
    config: (b) => ({ api_key: KEY, base_url: b }),
    base: (u) => `${u}/v1`,
  },
  {
    name: "google",
    vendor: "gemini",
    model: "gemini-2.5-flash-lite",
    config: (b) => ({ api_key: KEY, base_url: b }),
    base: (u) => u,
  },
  {
    name: "xai",
    vendor: "xai",
    model: "grok-4.3",
    config: (b) => ({ api_key: KEY, base_url: b }),
    base: (u) => `${u}/v1`,
  },
  {
    name: "openai-compatible",
    vendor: "ollama",
    model: "local-model",
    config: (b) => ({ base_url: b, dialect: "ollama", models: ["local-model"] }),
    base: (u) => `${u}/v1`,
  },
];

const TPM =
  "Request too large for gpt-5.4-mini in organization org-test on tokens per min (TPM): Limit 30000, Requested 36055. The input or output tokens must be reduced in order to run successfully.";

for (const p of PROVIDERS) {
  describe(`${p.name}: vendor faults`, () => {
    let fake: FakeVendor;
    let plugin: Launched;
    const request: RequestInit = {
      modelId: p.model,
      messages: [{ role: Role.USER, content: [text("hello")] }],
    };
    const configure = async (baseUrl: string) => {
      const res = await plugin.client.configure({ config: p.config(baseUrl) as never });
      expect(res.result?.diagnostics.filter((d) => d.severity === 1)).toEqual([]);
    };
    const failure = async () => {
      const { events, error } = await collect(plugin.client, request);
      expect(error).toBeUndefined();
      const e = errorOf(events);
      expect(e, `no error event: ${JSON.stringify(events.map((x) => x.event.case))}`).toBeDefined();
      return e!;
    };

    beforeAll(async () => {
      fake = await startFakeVendor({ vendor: p.vendor, script: [] });
      plugin = await launch(p.name, new URL(`../../../providers/${p.name}/src/main.ts`, import.meta.url));
      await configure(p.base(fake.url));
    });
    afterAll(async () => {
      await plugin?.host.shutdown();
      await fake?.close();
    });

    it.each([
      ["an HTML page", scenarios.htmlOk(), /HTML page/],
      ["an empty body", scenarios.emptyOk(), /empty body/],
      ["bytes that hold no event", scenarios.garbageOk(), /not an event stream/],
    ])("classifies a 200 with %s as an invalid response, not retried", async (_what, entry, message) => {
      fake.push(entry);
      const e = await failure();
      expect(e).toMatchObject({ categoryName: "UNKNOWN", retryable: false, vendorCode: "invalid_response" });
      expect(e.message).toMatch(message);
      expect(e.message).not.toMatch(/overloaded/i);
    });

    it.each([
      ["before the status line", scenarios.hangup()],
      ["partway through the stream", scenarios.resetMidStream({ afterFrames: 2 })],
    ])("classifies a connection reset %s as a retryable transport failure", async (_when, entry) => {
      fake.push(entry);
      const e = await failure();
      expect(e).toMatchObject({
        category: ModelErrorCategory.OVERLOADED,
        retryable: true,
        vendorCode: "transport_error",
      });
    });

    it("says cannot reach <url> for a refused connection, and does not ask for a retry", async () => {
      const url = await unreachableUrl();
      await configure(p.base(url));
      try {
        const e = await failure();
        expect(e).toMatchObject({
          category: ModelErrorCategory.OVERLOADED,
          retryable: false,
          vendorCode: "unreachable",
        });
        expect(e.message).toContain(`cannot reach ${url} (connection refused)`);
      } finally {
        await configure(p.base(fake.url));
      }
    });

    it("honours x-should-retry: false", async () => {
      fake.push({ kind: "error", status: 503, shouldRetry: false });
      const e = await failure();
      expect(e).toMatchObject({ category: ModelErrorCategory.OVERLOADED, retryable: false });
      fake.push({ kind: "error", status: 503 });
      expect(await failure()).toMatchObject({ category: ModelErrorCategory.OVERLOADED, retryable: true });
    });

    it("does not retry a request larger than the per-minute token budget; retries a plain rate limit", async () => {
      fake.push({
        kind: "error",
        status: 429,
        message: TPM,
        code: "rate_limit_exceeded",
        errorType: "tokens",
      });
      const e = await failure();
      expect(e).toMatchObject({ category: ModelErrorCategory.RATE_LIMITED, retryable: false });
      fake.push({ kind: "error", status: 429, retryAfterSeconds: 1 });
      expect(await failure()).toMatchObject({ category: ModelErrorCategory.RATE_LIMITED, retryable: true });
    });

    it.each([
      ["before the response headers", scenarios.stallBeforeHeaders()],
      ["mid-stream", scenarios.stall({ afterFrames: 2 })],
    ])("ends a call stalled %s when it is cancelled, closing the connection", async (_when, entry) => {
      fake.push(entry);
      const ac = new AbortController();
      const done = collect(plugin.client, request, ac.signal);
      await fake.waitForStall();
      ac.abort();
      const { events } = await done;
      expect(errorOf(events)).toBeUndefined();
    });
  });
}
