// Every recorded vendor stream and documented error body in testing/fake-vendors/corpus,
// replayed byte for byte through its first-party adapter over the real plugin boundary: the
// kernel's accumulator must rebuild exactly what the vendor sent (text, thinking and its
// opaque signature, tool calls, stop reason, usage, vendor cost), opaque tokens must go back
// to the vendor unchanged, and each error body must land in the model error taxonomy.
import {
  type CorpusStream,
  type CorpusVendor,
  corpusErrorResponse,
  corpusResponse,
  corpusText,
  type FakeVendor,
  loadCorpus,
  startCombinedFake,
} from "@pluggableharness/fake-vendors";
import { type Message, Role } from "@pluggableharness/protocol/content";
import { ModelErrorCategory, type ModelSpec, StopReason } from "@pluggableharness/protocol/model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accumulate, collect, type Launched, launch, only, type RequestInit, text } from "../src/harness.ts";

const corpus = loadCorpus();
const KEY = "sk-corpus-test";

interface Adapter {
  provider: string;
  plugin: Launched;
  model: ModelSpec;
}

let fake: FakeVendor;
const adapters = new Map<CorpusVendor, Adapter>();

const main = (name: string) => new URL(`../../../providers/${name}/src/main.ts`, import.meta.url);

async function start(
  vendor: CorpusVendor,
  provider: string,
  dir: string,
  config: Record<string, unknown>,
  pick: (ids: string[]) => string,
): Promise<void> {
  const plugin = await launch(provider, main(dir));
  const res = await plugin.client.configure({ config: config as never });
  expect(res.result?.diagnostics.filter((d) => d.severity === 2)).toEqual([]);
  const models = (await plugin.client.getCapabilities({})).capabilities!.models;
  const id = pick(models.map((m) => m.id));
  adapters.set(vendor, { provider, plugin, model: models.find((m) => m.id === id)! });
}

beforeAll(async () => {
  fake = await startCombinedFake({ rateLimits: false });
  const first = (ids: string[]) => ids[0]!;
  await Promise.all([
    start(
      "anthropic",
      "anthropic",
      "anthropic",
      { api_key: KEY, base_url: fake.url },
      () => "claude-sonnet-4-6",
    ),
    start("openai-responses", "openai", "openai", { api_key: KEY, base_url: `${fake.url}/v1` }, first),
    start(
      "openai-chat",
      "openai-compatible",
      "openai-compatible",
      {
        base_url: `${fake.url}/v1`,
        dialect: "openai",
        models: ["gpt-4o-so"],
      },
      first,
    ),
    start("xai", "xai", "xai", { api_key: KEY, base_url: `${fake.url}/xai/v1` }, first),
    start("gemini", "google", "google", { api_key: KEY, base_url: fake.url }, first),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([...adapters.values()].map((a) => a.plugin.host.shutdown()));
  await fake?.close();
});

const baseRequest = (
  a: Adapter,
  entry: { expect: CorpusStream["expect"] },
  messages?: Message[],
): RequestInit =>
  ({
    modelId: a.model.id,
    messages: messages ?? [{ role: Role.USER, id: "m0", content: [text("Replay.")] }],
    // Declared, so that tool names map back exactly as recorded.
    tools: (entry.expect.toolCalls ?? []).map((c) => ({ name: c.name, description: c.name })),
    callContext: { sessionId: "corpus", turnId: "t", workingDirectory: "/tmp" },
  }) as RequestInit;

const STOP: Record<string, StopReason> = {
  end_turn: StopReason.END_TURN,
  tool_use: StopReason.TOOL_USE,
  max_tokens: StopReason.MAX_TOKENS,
  refusal: StopReason.REFUSAL,
  stop_sequence: StopReason.STOP_SEQUENCE,
  content_filtered: StopReason.CONTENT_FILTERED,
};

const decode = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

/** The signature a Gemini stream carries (the longest thoughtSignature in the file). */
function streamSignature(entry: CorpusStream): string {
  const all = [...corpusText(entry).matchAll(/"thoughtSignature":"([^"]+)"/g)].map((m) => m[1]!);
  return all.sort((a, b) => b.length - a.length)[0] ?? "";
}

describe("recorded vendor streams, replayed through each adapter", () => {
  it("covers every adapter", () => {
    expect(new Set(corpus.streams.map((s) => s.vendor))).toEqual(new Set(adapters.keys()));
    for (const s of corpus.streams) expect(s.source.license ?? s.source.docs, s.id).toBeTruthy();
  });

  for (const entry of corpus.streams) {
    it(entry.id, async () => {
      const a = adapters.get(entry.vendor)!;
      const exp = entry.expect;
      fake.push(corpusResponse(entry));
      const { events, error } = await collect(a.plugin.client, baseRequest(a, entry));
      expect(error).toBeUndefined();
      const done = accumulate(events, a.model, a.provider);

      if (exp.error) {
        expect(done.error, "an in-band error").toBeDefined();
        const e = only(events, "error")[0]!;
        expect(ModelErrorCategory[e.category]).toBe(exp.error.category.toUpperCase());
        expect(e.retryable).toBe(exp.error.retryable);
        if (exp.error.httpStatus !== undefined) expect(e.httpStatus).toBe(exp.error.httpStatus);
        return;
      }
      expect(done.error, done.error?.message).toBeUndefined();
      expect(done.complete).toBe(true);
      const blocks = done.message.content;
      const texts = blocks.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : [])).join("");
      if (exp.text !== undefined) expect(texts).toBe(exp.text);
      if (exp.textStartsWith) expect(texts.startsWith(exp.textStartsWith)).toBe(true);
      if (exp.textEndsWith) expect(texts.endsWith(exp.textEndsWith)).toBe(true);
      const thinking = blocks.flatMap((b) => (b.block.case === "thinking" ? [b.block.value] : []));
      if (exp.thinking !== undefined) expect(thinking.map((t) => t.text).join("")).toBe(exp.thinking);
      const signature = exp.signatureFile ? streamSignature(entry) : exp.signature;
      if (signature !== undefined) {
        expect(thinking.map((t) => decode(t.signature))).toContain(signature);
      }
      if (exp.stop) expect(StopReason[done.stop!.reason]).toBe(StopReason[STOP[exp.stop]!]);
      if (exp.refusalText !== undefined) {
        const said = [texts, ...done.safetyNotices.map((n) => n.message)].join("\n");
        expect(said).toContain(exp.refusalText);
      }
      const calls = blocks.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : []));
      expect(
        calls.map((c) => ({
          ...(exp.toolCalls?.some((t) => t.id) ? { id: c.id } : {}),
          name: c.name,
          input: c.input ?? {},
        })),
      ).toEqual(exp.toolCalls ?? []);
      expect(done.invalidToolCalls.map((c) => c.name)).toEqual(exp.invalidToolCalls ?? []);

      // Usage: the vendor's counts, in the kernel's non-overlapping counters.
      expect(done.usage).toHaveLength(1);
      const u = done.usage[0]!.usage!;
      const want = exp.usage ?? {};
      if (want.input !== undefined) expect(u.inputTokens, "input").toBe(BigInt(want.input));
      if (want.output !== undefined) expect(u.outputTokens, "output").toBe(BigInt(want.output));
      if (want.cacheRead !== undefined)
        expect(u.cacheReadTokens ?? 0n, "cache read").toBe(BigInt(want.cacheRead));
      if (want.cacheWrite !== undefined)
        expect(u.cacheWriteTokens ?? 0n, "cache write").toBe(BigInt(want.cacheWrite));
      if (want.reasoning !== undefined)
        expect(u.reasoningTokens ?? 0n, "reasoning").toBe(BigInt(want.reasoning));
      for (const [name, value] of Object.entries(exp.components ?? {})) {
        expect(u.components.find((c) => c.name === name)?.value, name).toBe(BigInt(value));
      }
      if (exp.vendorCost) expect(u.vendorCost).toMatchObject(exp.vendorCost);
      if (exp.safety?.category) {
        expect(done.safetyNotices.some((n) => JSON.stringify(n.attrs).includes(exp.safety!.category!))).toBe(
          true,
        );
      }

      // Opaque tokens go back to the vendor exactly as received.
      if (exp.roundTrip && signature) {
        const history: Message[] = [
          { role: Role.USER, id: "m0", content: [text("Replay.")] } as never,
          { ...done.message, producedByProvider: a.provider, producedByModelId: a.model.id } as Message,
          { role: Role.USER, id: "m2", content: [text("Next.")] } as never,
        ];
        if (calls.length > 0) {
          history[2] = {
            role: Role.USER,
            id: "m2",
            content: calls.map((c) => ({
              block: {
                case: "toolResult",
                value: { toolUseId: c.id, isError: false, content: [text("sunny")] },
              },
            })),
          } as never;
        }
        fake.push(corpusResponse(corpus.streams.find((s) => s.vendor === entry.vendor && !s.expect.error)!));
        await collect(a.plugin.client, baseRequest(a, entry, history));
        const sent = fake.requests.at(-1)!;
        expect(sent.bodyText).toContain(JSON.stringify(signature).slice(1, -1));
        if (exp.roundTrip === "anthropic-thinking") {
          const assistant = (
            sent.json as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> }
          ).messages[1]!;
          expect(assistant.content[0]).toEqual({ type: "thinking", thinking: exp.thinking, signature });
        }
      }
    });
  }
});

describe("documented error bodies, mapped to the model error taxonomy", () => {
  for (const entry of corpus.errors) {
    it(`${entry.id} -> ${entry.expect.category}`, async () => {
      const a = adapters.get(entry.vendor)!;
      fake.push(corpusErrorResponse(entry));
      const { events } = await collect(a.plugin.client, baseRequest(a, { expect: {} }));
      const errors = only(events, "error");
      expect(errors, JSON.stringify(events.map((e) => e.event.case))).toHaveLength(1);
      const e = errors[0]!;
      expect(ModelErrorCategory[e.category], e.message).toBe(entry.expect.category.toUpperCase());
      expect(e.retryable).toBe(entry.expect.retryable);
      expect(e.httpStatus).toBe(entry.expect.httpStatus ?? entry.status);
      if (entry.expect.retryAfterSeconds !== undefined)
        expect(e.retryAfterSeconds).toBe(entry.expect.retryAfterSeconds);
    });
  }
});
