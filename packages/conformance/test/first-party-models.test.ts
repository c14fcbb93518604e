// Rules every first-party model provider must keep, checked across all of them at once
// over the real plugin boundary against one validating loopback fake of every vendor:
// static catalogs, config schemas, honest keep-alive declarations, the v1 scope, tool
// choice translation and cache breakpoints left out where a model has no markers.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { equals, type JsonObject } from "@bufbuild/protobuf";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { type ContentBlockSchema, Role } from "@pluggableharness/protocol/content";
import {
  type Capabilities,
  CapabilitiesSchema,
  ModelService,
  type StreamCompletionRequestSchema,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LaunchedPlugin, launchPlugin } from "../src/index.ts";

const PROVIDERS = ["anthropic", "google", "openai", "xai", "openai-compatible"] as const;
type Provider = (typeof PROVIDERS)[number];
const main = (p: Provider) => new URL(`../../../providers/${p}/src/main.ts`, import.meta.url).pathname;

/** The model each provider is exercised with. */
const MODEL: Record<Provider, string> = {
  anthropic: "claude-haiku-4-5-20251001",
  google: "gemini-2.5-flash-lite",
  openai: "gpt-5.4",
  xai: "grok-4.3",
  "openai-compatible": "llama3.2",
};

/** Where each provider keeps the forced / forbidden tool-call control in its vendor request. */
const CHOICE_SENT: Record<Provider, (body: Record<string, unknown>) => unknown> = {
  anthropic: (b) => b["tool_choice"],
  google: (b) => (b["toolConfig"] as { functionCallingConfig?: unknown } | undefined)?.functionCallingConfig,
  openai: (b) => b["tool_choice"],
  xai: (b) => b["tool_choice"],
  "openai-compatible": (b) => b["tool_choice"],
};
const CHOICE_EXPECTED: Record<Provider, { any: unknown; none: unknown }> = {
  anthropic: { any: { type: "any" }, none: { type: "none" } },
  google: { any: { mode: "ANY" }, none: { mode: "NONE" } },
  openai: { any: "required", none: "none" },
  xai: { any: "required", none: "none" },
  "openai-compatible": { any: "required", none: "none" },
};

let fake: FakeVendor;
const plugins = {} as Record<Provider, LaunchedPlugin>;
const before = {} as Record<Provider, Capabilities>;
const after = {} as Record<Provider, Capabilities>;
let vendorRequestsDuringCatalogs = -1;

const config = (p: Provider): JsonObject =>
  ({
    anthropic: { api_key: "sk-ant-first-party", base_url: fake.url },
    google: { api_key: "gm-first-party", base_url: fake.url },
    openai: { api_key: "sk-first-party", base_url: `${fake.url}/v1` },
    xai: { api_key: "xai-first-party", base_url: fake.baseUrl("xai") },
    "openai-compatible": { base_url: fake.baseUrl("ollama"), dialect: "ollama", model: "llama3.2" },
  })[p];

const client = (p: Provider) => plugins[p].host.client(ModelService);
const allRequests = () => fake.requests.length + fake.otherRequests.length;

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "combined", validate: true, script: () => scenarios.text("ok") });
  await Promise.all(
    PROVIDERS.map(async (p) => {
      plugins[p] = launchPlugin({ executable: main(p), name: p });
      await plugins[p].host.start();
      before[p] = (await client(p).getCapabilities({})).capabilities!;
      const res = await client(p).configure({ config: config(p) });
      expect(res.result?.diagnostics ?? [], p).toEqual([]);
      after[p] = (await client(p).getCapabilities({})).capabilities!;
    }),
  );
  vendorRequestsDuringCatalogs = allRequests();
});

afterAll(async () => {
  await Promise.all(PROVIDERS.map((p) => plugins[p]?.close()));
  await fake?.close();
});

type RequestInit = MessageInitShape<typeof StreamCompletionRequestSchema>;
type BlockInit = MessageInitShape<typeof ContentBlockSchema>;

const say = (text: string): BlockInit => ({ block: { case: "text", value: { text } } });
const userSays = (content: BlockInit[]) => ({ role: Role.USER, id: "01FIRSTPARTY00000000000000", content });

function request(p: Provider, extra: Partial<RequestInit> = {}): RequestInit {
  return {
    modelId: MODEL[p],
    messages: [
      {
        role: Role.USER,
        id: "01FIRSTPARTY00000000000000",
        content: [{ block: { case: "text", value: { text: "Hi" } } }],
      },
    ],
    tools: [
      {
        name: "fs.read_file",
        description: "Read a file",
        inputSchema: { type: 6, properties: [{ name: "path", schema: { type: 1 } }], required: ["path"] },
      },
    ],
    assembledContext: [
      {
        provider: "ctx",
        label: "rules",
        content: [{ block: { case: "text", value: { text: "Be brief." } } }],
      },
    ],
    callContext: { sessionId: "01FIRSTPARTYSESSION0000000", turnId: "01FIRSTPARTYTURN0000000000" },
    ...extra,
  } as RequestInit;
}

/** Runs one completion; returns the JSON body the vendor received and the text streamed back. */
async function exchange(
  p: Provider,
  req: RequestInit,
): Promise<{ body: Record<string, unknown>; text: string }> {
  const n = fake.requests.length;
  const events = [];
  for await (const e of client(p).streamCompletion(req)) events.push(e);
  const errors = events.filter((e) => e.event.case === "error").map((e) => JSON.stringify(e.event.value));
  expect(errors, p).toEqual([]);
  expect(fake.requests.length, p).toBe(n + 1);
  const r = fake.requests.at(-1)!;
  expect(r.rejected ?? false, `${p}: the validating fake refused the request`).toBe(false);
  const text = events.map((e) => (e.event.case === "textDelta" ? e.event.value.text : "")).join("");
  return { body: r.json as Record<string, unknown>, text };
}

const sent = async (p: Provider, req: RequestInit) => (await exchange(p, req)).body;

/** A 1x1 transparent PNG and a minimal PDF. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);
const PDF = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n");

describe("first-party model providers", () => {
  it("GetCapabilities is answered from a built-in catalog, identical on every call, without any vendor request", async () => {
    expect(vendorRequestsDuringCatalogs).toBe(0);
    for (const p of PROVIDERS) {
      const again = (await client(p).getCapabilities({})).capabilities!;
      expect(equals(CapabilitiesSchema, after[p], again), p).toBe(true);
      if (p === "openai-compatible") {
        // A compatible server has no vendor catalog: its models come from configuration.
        expect(before[p].models).toEqual([]);
        expect(after[p].models.map((m) => m.id)).toEqual(["llama3.2"]);
      } else {
        expect(before[p].models.length, p).toBeGreaterThan(1);
        expect(equals(CapabilitiesSchema, before[p], after[p]), p).toBe(true);
      }
    }
    expect(allRequests()).toBe(0);
  });

  it("every provider's capabilities carry its ConfigSchema", () => {
    for (const p of PROVIDERS) {
      const attrs = before[p].configSchema?.attributes ?? [];
      expect(
        attrs.map((a) => a.name),
        p,
      ).toContain("base_url");
      const key = attrs.find((a) => a.name === "api_key");
      expect(key, p).toMatchObject({ sensitive: true, required: p !== "openai-compatible" });
      expect(key?.defaultJson, p).toBeUndefined();
    }
  });

  it("only a provider that runs its own keep-alive loop declares keepalive_supported", () => {
    for (const p of PROVIDERS) {
      const declared = after[p].models.filter((m) => m.caching?.keepaliveSupported).map((m) => m.id);
      const runsLoop = (after[p].configSchema?.attributes ?? []).some(
        (a) => a.name === "cache_keepalive_seconds",
      );
      if (p === "anthropic") {
        expect(runsLoop).toBe(true);
        expect(declared.length).toBe(after[p].models.filter((m) => m.caching?.supported).length);
      } else {
        expect(runsLoop, p).toBe(false);
        expect(declared, p).toEqual([]);
      }
    }
  });

  it("no provider offers realtime, voice or embedding models", () => {
    expect(ModelService.methods.map((m) => m.name).sort()).toEqual(
      ["Configure", "CountTokens", "Describe", "GetCapabilities", "Render", "StreamCompletion"].sort(),
    );
    for (const p of PROVIDERS) {
      for (const m of after[p].models)
        expect(m.id, p).not.toMatch(/realtime|audio|voice|speech|tts|transcri|whisper|embed/i);
    }
  });

  it("text goes to every vendor and comes back as text", async () => {
    for (const p of PROVIDERS) {
      const { body, text } = await exchange(
        p,
        request(p, { messages: [userSays([say("What is 2+2? Answer briefly.")])] }),
      );
      expect(JSON.stringify(body), p).toContain("What is 2+2? Answer briefly.");
      expect(JSON.stringify(body), p).toContain("Be brief.");
      expect(text, p).toBe("ok");
    }
  });

  it("images go to every model declaring vision, and documents to every model declaring document support", async () => {
    const seen = { image: 0, document: 0 };
    for (const p of PROVIDERS) {
      const spec = after[p].models.find((m) => m.id === MODEL[p])!;
      const content: BlockInit[] = [say("Describe these.")];
      if (spec.supportsVision) {
        content.push({
          block: {
            case: "image",
            value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array(PNG) } },
          },
        });
      }
      if (spec.supportsDocuments) {
        content.push({
          block: {
            case: "document",
            value: { mediaType: "application/pdf", data: new Uint8Array(PDF), filename: "spec.pdf" },
          },
        });
      }
      if (content.length === 1) continue;
      const body = JSON.stringify(await sent(p, request(p, { messages: [userSays(content)] })));
      if (spec.supportsVision) {
        expect(body, `${p} image`).toContain(PNG.toString("base64"));
        seen.image++;
      }
      if (spec.supportsDocuments) {
        expect(body, `${p} document`).toContain(PDF.toString("base64"));
        seen.document++;
      }
    }
    // Anthropic, Gemini, OpenAI and xAI models take images; all but xAI take documents.
    expect(seen).toEqual({ image: 4, document: 3 });
  });

  it("ANY forces a tool call and NONE forbids one, in each vendor's own terms", async () => {
    let checked = 0;
    for (const p of PROVIDERS) {
      const spec = after[p].models.find((m) => m.id === MODEL[p])!;
      for (const [mode, key] of [
        [ToolChoiceMode.ANY, "any"],
        [ToolChoiceMode.NONE, "none"],
      ] as const) {
        if (!spec.supportedToolChoiceModes.includes(mode)) continue;
        const body = await sent(p, request(p, { params: { toolChoice: { mode } } }));
        expect(CHOICE_SENT[p](body), `${p} ${key}`).toEqual(CHOICE_EXPECTED[p][key]);
        checked++;
      }
    }
    // Each exercised model declares both modes, so every provider is checked both ways.
    expect(checked).toBe(10);
  });

  it("cache breakpoints are ignored for models without explicit markers: the vendor request is unchanged", async () => {
    let checked = 0;
    for (const p of PROVIDERS) {
      const spec = after[p].models.find((m) => m.id === MODEL[p])!;
      if (spec.caching?.explicitMarkers) continue;
      const plain = await sent(p, request(p));
      const marked = await sent(
        p,
        request(p, {
          cacheBreakpoints: [
            { position: { case: "afterTools", value: {} } },
            { position: { case: "afterAssembledContext", value: {} } },
          ],
        }),
      );
      expect(marked, p).toEqual(plain);
      expect(JSON.stringify(marked), p).not.toMatch(/cache_control|cachedContent/);
      checked++;
    }
    expect(checked).toBe(3); // openai, xai and the compatible server
  });
});
