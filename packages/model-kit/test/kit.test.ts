// Unit tests of the vendor-neutral pieces: classification, retry hints, rate-limit
// headers, configuration, catalogs, schemas, tool names, content rules and SSE.
import { createServer } from "node:net";
import { create, fromJson } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import {
  ClassifiedModelError,
  grpcCodeForModelError,
  validateCapabilities,
} from "@pluggableharness/kernel/domain";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { CapabilitiesSchema, RateLimitKind } from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import { describe, expect, it } from "vitest";
import {
  ANTHROPIC_TOOL_NAMES,
  type CatalogModel,
  checkBaseUrl,
  checkContentSupport,
  classifyHttpFailure,
  type ErrorCategory,
  ev,
  exceedsRateLimit,
  GEMINI_TOOL_NAMES,
  GRPC_CODE,
  ModelFailure,
  makeRedactor,
  parseConfig,
  parseCustomModels,
  parseDurationSeconds,
  prepareHistory,
  rateLimitsFromHeaders,
  readSse,
  retryAfterFromHeaders,
  schemaToJson,
  sendVendorRequest,
  toModelSpec,
  toolNameMap,
} from "../src/index.ts";

describe("error classification", () => {
  const cases: Array<[number, ErrorCategory, boolean]> = [
    [400, "invalid_request", false],
    [401, "auth_error", false],
    [402, "auth_error", false],
    [403, "auth_error", false],
    [404, "invalid_request", false],
    [408, "overloaded", true],
    [413, "context_length_exceeded", false],
    [429, "rate_limited", true],
    [500, "overloaded", true],
    [503, "overloaded", true],
    [529, "overloaded", true],
  ];
  it.each(cases)("HTTP %i is %s (retryable %s)", (status, category, retryable) => {
    const f = classifyHttpFailure({ status });
    expect(f.category).toBe(category);
    expect(f.retryable).toBe(retryable);
    expect(f.httpStatus).toBe(status);
  });

  it("lets vendor verdicts and x-should-retry override the status", () => {
    expect(classifyHttpFailure({ status: 400, contextLength: true }).category).toBe(
      "context_length_exceeded",
    );
    expect(classifyHttpFailure({ status: 400, contentFiltered: true }).category).toBe("content_filtered");
    const noRetry = classifyHttpFailure({ status: 500, headers: new Headers({ "x-should-retry": "false" }) });
    expect(noRetry.retryable).toBe(false);
  });

  it("takes retry-after from headers first, then the body", () => {
    expect(
      classifyHttpFailure({ status: 429, headers: new Headers({ "retry-after": "7" }) }).retryAfterSeconds,
    ).toBe(7);
    expect(
      classifyHttpFailure({
        status: 429,
        headers: new Headers({ "retry-after-ms": "1500", "retry-after": "9" }),
      }).retryAfterSeconds,
    ).toBe(1.5);
    expect(classifyHttpFailure({ status: 429, bodyRetryAfterSeconds: 34.4 }).retryAfterSeconds).toBe(34.4);
    expect(classifyHttpFailure({ status: 429 }).retryAfterSeconds).toBeUndefined();
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterFromHeaders(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }), now)).toBe(
      30,
    );
    expect(retryAfterFromHeaders(new Headers({ "retry-after": "soon" }))).toBeUndefined();
  });

  it("maps every category to the same gRPC code as the kernel", () => {
    for (const [category, code] of Object.entries(GRPC_CODE)) {
      expect(code).toBe(grpcCodeForModelError(category as ErrorCategory));
    }
  });

  it("round-trips through the kernel's classifier with redaction applied", () => {
    const f = new ModelFailure("rate_limited", "key sk-secret-123 over quota", {
      retryAfterSeconds: 3,
      vendorCode: "rate_limit_error",
      vendorBody: '{"error":"sk-secret-123"}',
      httpStatus: 429,
    });
    const proto = f.toProto(makeRedactor(["sk-secret-123"]));
    expect(JSON.stringify(proto)).not.toContain("sk-secret-123");
    const k = ClassifiedModelError.fromProto(proto);
    expect(k.category).toBe("rate_limited");
    expect(k.retryable).toBe(true);
    expect(k.retryAfterSeconds).toBe(3);
    expect(k.vendorCode).toBe("rate_limit_error");
  });

  it("parses protobuf and Go durations", () => {
    expect(parseDurationSeconds("34.4s")).toBe(34.4);
    expect(parseDurationSeconds("6m0s")).toBe(360);
    expect(parseDurationSeconds("120ms")).toBeCloseTo(0.12);
    expect(parseDurationSeconds("1h2m3s")).toBe(3723);
    expect(parseDurationSeconds("abc")).toBeUndefined();
  });
});

describe("rate-limit snapshots", () => {
  it("reports exactly the headers present and nothing else", () => {
    const headers = new Headers({
      "anthropic-ratelimit-requests-limit": "1000",
      "anthropic-ratelimit-requests-remaining": "999",
      "anthropic-ratelimit-requests-reset": "2025-02-24T22:25:30Z",
      "anthropic-ratelimit-output-tokens-remaining": "12000",
    });
    const snaps = rateLimitsFromHeaders(headers, [
      {
        kind: RateLimitKind.REQUESTS,
        limit: "anthropic-ratelimit-requests-limit",
        remaining: "anthropic-ratelimit-requests-remaining",
        reset: "anthropic-ratelimit-requests-reset",
      },
      {
        kind: RateLimitKind.TOKENS,
        limit: "anthropic-ratelimit-tokens-limit",
        remaining: "anthropic-ratelimit-tokens-remaining",
      },
      {
        kind: RateLimitKind.OUTPUT_TOKENS,
        limit: "anthropic-ratelimit-output-tokens-limit",
        remaining: "anthropic-ratelimit-output-tokens-remaining",
      },
    ]);
    expect(snaps).toHaveLength(2);
    expect(snaps[0]!.limit).toBe(1000n);
    expect(snaps[0]!.remaining).toBe(999n);
    expect(timestampMs(snaps[0]!.resetsAt!)).toBe(Date.parse("2025-02-24T22:25:30Z"));
    expect(snaps[0]!.usedPercent).toBeUndefined();
    expect(snaps[1]!.kind).toBe(RateLimitKind.OUTPUT_TOKENS);
    expect(snaps[1]!.limit).toBeUndefined();
    expect(snaps[1]!.remaining).toBe(12000n);
  });

  it("turns a relative reset into an instant and keeps percentages as percentages", () => {
    const now = 1_000_000;
    const [s] = rateLimitsFromHeaders(
      new Headers({ "x-reset": "6m0s", "x-used": "42.5" }),
      [{ kind: RateLimitKind.TOKENS, reset: "x-reset", resetFormat: "duration", usedPercent: "x-used" }],
      now,
    );
    expect(timestampMs(s!.resetsAt!)).toBe(now + 360_000);
    expect(s!.usedPercent).toBe(42.5);
    expect(s!.limit).toBeUndefined();
    expect(s!.remaining).toBeUndefined();
  });
});

describe("configuration", () => {
  const attrs = [
    { name: "api_key", kind: "string" as const, description: "key", required: true, sensitive: true },
    {
      name: "base_url",
      kind: "string" as const,
      description: "url",
      default: "https://x.test",
      check: checkBaseUrl,
    },
    { name: "n", kind: "number" as const, description: "n" },
  ];
  it("rejects a missing key, a bad URL and unknown attributes without echoing values", () => {
    const secret = "sk-canary-never-echo";
    const r = parseConfig(attrs, { base_url: `ftp://${secret}@host`, bogus: secret, n: "x" });
    const text = JSON.stringify(r.diagnostics);
    expect(text).not.toContain(secret);
    const summaries = r.diagnostics.map((d) => d.summary);
    expect(summaries).toContain('Missing required attribute "api_key"');
    expect(summaries).toContain('Invalid value for "base_url"');
    expect(summaries).toContain('Unsupported attribute "bogus"');
    expect(summaries).toContain('Invalid value for "n"');
    expect(r.diagnostics.every((d) => d.severity === DiagnosticSeverity.ERROR)).toBe(true);
  });
  it("applies defaults and collects secrets", () => {
    const r = parseConfig(attrs, { api_key: "sk-abc-123" });
    expect(r.diagnostics).toEqual([]);
    expect(r.values["base_url"]).toBe("https://x.test");
    expect(r.secrets).toEqual(["sk-abc-123"]);
    const redact = makeRedactor(r.secrets);
    expect(redact("got sk-abc-123 and sk-abc-123")).toBe("got [redacted] and [redacted]");
    // Encoded copies too: in a URL, a Basic header, a hex dump.
    expect(redact(`?key=${encodeURIComponent("sk-abc-123")}`)).toBe("?key=[redacted]");
    expect(redact(`Basic ${Buffer.from("u:sk-abc-123").toString("base64")}`)).not.toContain(
      Buffer.from("sk-abc-123").toString("base64").slice(4, 12),
    );
    expect(redact(Buffer.from("sk-abc-123").toString("hex"))).toBe("[redacted]");
  });
  it("accepts only absolute http(s) base URLs without credentials or query", () => {
    expect(checkBaseUrl("https://api.example.com/v1")).toBeUndefined();
    expect(checkBaseUrl("http://127.0.0.1:8080")).toBeUndefined();
    expect(checkBaseUrl("api.example.com")).toBeDefined();
    expect(checkBaseUrl("https://u:p@h")).toBeDefined();
    expect(checkBaseUrl("https://h/?key=1")).toBeDefined();
  });
});

const base: CatalogModel = {
  id: "base-1",
  contextWindow: 200_000,
  maxOutputTokens: 8_192,
  toolUse: true,
  vision: true,
  documents: false,
  streaming: true,
  parallelToolCalls: true,
  thinking: { budget: { min: 1024, max: 32_000 }, disable: "always" },
  caching: { explicitMarkers: true, implicitAutomatic: false },
  toolChoiceModes: ["auto", "any", "none", "specific"],
  pricing: {
    tiers: [{ input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3, batchInput: 1.5, batchOutput: 7.5 }],
  },
  sources: { all: "test" },
};

describe("catalogs", () => {
  it("produce ModelSpecs the kernel's validator accepts", () => {
    const caps = create(CapabilitiesSchema, { models: [toModelSpec(base)] });
    expect(() => validateCapabilities("t", caps)).not.toThrow();
    const spec = caps.models[0]!;
    expect(spec.pricing!.tiers[0]!.cacheReadPerMtok).toBe(0.3);
    expect(spec.thinking!.budget!.range!.min).toBe(1024n);
  });

  it("parse user-declared models, inheriting with like, and name every problem", () => {
    const ok = parseCustomModels(
      "models_json",
      JSON.stringify({
        "base-1-fast": { like: "base-1", max_output_tokens: 4096 },
        local: {
          context_window: 32_000,
          max_output_tokens: 2_000,
          pricing: { free: true },
          tool_choice_modes: ["auto"],
        },
      }),
      [base],
    );
    expect(ok.diagnostics).toEqual([]);
    expect(ok.models.map((m) => [m.id, m.maxOutputTokens, m.userDeclared])).toEqual([
      ["base-1-fast", 4096, true],
      ["local", 2000, true],
    ]);
    const caps = create(CapabilitiesSchema, { models: ok.models.map(toModelSpec) });
    expect(() => validateCapabilities("t", caps)).not.toThrow();

    const bad = parseCustomModels(
      "models_json",
      JSON.stringify({ x: { like: "nope", colour: 1 }, y: { context_window: -1 } }),
      [base],
    );
    const summaries = bad.diagnostics.map((d) => d.summary).join("\n");
    expect(summaries).toContain('Model "x": "like" names no built-in model');
    expect(summaries).toContain('Model "x": unknown key "colour"');
    expect(summaries).toContain('Model "y": "context_window" must be a positive integer');
    expect(summaries).toContain('Model "y": "pricing" is required');
    expect(parseCustomModels("models_json", "{", [base]).diagnostics[0]!.summary).toContain("not valid JSON");
  });

  it("carry a vision model's image limits into ModelSpec.image_limits, declared or inherited with like", () => {
    const seeing: CatalogModel = {
      ...base,
      id: "eye-1",
      vision: true,
      images: {
        maxBytes: 3_932_160,
        maxLongEdge: 1568,
        maxPixels: 1_150_000,
        manyImages: { over: 20, longEdge: 2000 },
      },
    };
    expect(toModelSpec(seeing).imageLimits).toMatchObject({
      maxBytes: 3_932_160n,
      maxLongEdge: 1568,
      maxPixels: 1_150_000n,
      manyImagesThreshold: 20,
      manyImagesLongEdge: 2000,
    });
    // A model without vision has none, whatever it declares.
    expect(toModelSpec({ ...seeing, vision: false }).imageLimits).toBeUndefined();
    const { models, diagnostics } = parseCustomModels(
      "models_json",
      JSON.stringify({
        "eye-1-fast": { like: "eye-1" },
        llava: {
          context_window: 4096,
          max_output_tokens: 1024,
          vision: true,
          pricing: { free: true },
          images: { max_bytes: 1_000_000, max_long_edge: 672 },
        },
      }),
      [seeing],
    );
    expect(diagnostics).toEqual([]);
    expect(models.map((m) => toModelSpec(m).imageLimits?.maxLongEdge)).toEqual([1568, 672]);
    const bad = parseCustomModels(
      "models_json",
      JSON.stringify({ z: { like: "eye-1", images: { max_long_edge: -1, colour: 1 } } }),
      [seeing],
    );
    const summaries = bad.diagnostics.map((d) => d.summary).join("\n");
    expect(summaries).toContain('"images.max_long_edge" must be a whole number, 0 or more');
    expect(summaries).toContain('unknown key "images.colour"');
  });
});

describe("tool schemas and names", () => {
  it("translates the subset in declaration order", () => {
    const schema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [
        { name: "path", schema: { type: "SCHEMA_TYPE_STRING", description: "file" } },
        { name: "mode", schema: { type: "SCHEMA_TYPE_STRING", enum: ["r", "w"] } },
        { name: "lines", schema: { type: "SCHEMA_TYPE_ARRAY", items: { type: "SCHEMA_TYPE_INTEGER" } } },
      ],
      required: ["path"],
      extraKeywords: { pattern: "x" },
    });
    const json = schemaToJson(schema);
    expect(json).toEqual({
      type: "object",
      properties: {
        path: { type: "string", description: "file" },
        mode: { type: "string", enum: ["r", "w"] },
        lines: { type: "array", items: { type: "integer" } },
      },
      required: ["path"],
    });
    expect(Object.keys(json["properties"] as object)).toEqual(["path", "mode", "lines"]);
    expect(schemaToJson(schema, { upperCaseTypes: true })["type"]).toBe("OBJECT");
  });

  it("renames only unacceptable tool names, reversibly and without collisions", () => {
    const m = toolNameMap(["read_file", "fs.read", "fs_read", "9lives"], ANTHROPIC_TOOL_NAMES);
    expect(m.toVendor("read_file")).toBe("read_file");
    expect(m.toVendor("fs_read")).toBe("fs_read");
    const renamed = m.toVendor("fs.read");
    expect(renamed).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(renamed).not.toBe("fs_read");
    expect(m.fromVendor(renamed)).toBe("fs.read");
    const g = toolNameMap(["9lives", "a/b"], GEMINI_TOOL_NAMES);
    expect(g.toVendor("9lives")).toBe("_9lives");
    expect(g.fromVendor("_9lives")).toBe("9lives");
    expect(g.toVendor("a/b")).toBe("a_b");
  });
});

describe("content rules", () => {
  const msg = (init: object): Message => create(MessageSchema, init as never);
  const self = { name: "anthropic", ownsModel: (id: string) => id.startsWith("claude-") };
  const thinking = { block: { case: "thinking", value: { text: "hmm", signature: new Uint8Array([1]) } } };
  const text = (t: string) => ({ block: { case: "text", value: { text: t } } });

  it("drops reasoning produced elsewhere, keeps own, and drops emptied messages", () => {
    const history = [
      msg({ role: Role.USER, content: [text("hi")] }),
      msg({ role: Role.ASSISTANT, producedByProvider: "google", content: [thinking, text("a")] }),
      msg({ role: Role.ASSISTANT, producedByModelId: "gemini-3-pro", content: [thinking] }),
      msg({
        role: Role.ASSISTANT,
        producedByProvider: "claude-alias",
        producedByModelId: "claude-sonnet-4-6",
        content: [thinking, text("b")],
      }),
      msg({ role: Role.ASSISTANT, content: [thinking, text("c")] }),
    ];
    const r = prepareHistory(history, self);
    expect(r.messages.map((m) => [m.index, m.origin, m.blocks.map((b) => b.block.case)])).toEqual([
      [0, "foreign", ["text"]],
      [1, "foreign", ["text"]],
      [3, "own", ["thinking", "text"]],
      [4, "foreign", ["text"]],
    ]);
    expect(r.droppedReasoning).toBe(3);
    expect(r.droppedMessages).toBe(1);
  });

  it("rejects images and documents the model cannot take, including inside tool results", () => {
    const image = {
      block: {
        case: "image",
        value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1]) } },
      },
    };
    const doc = {
      block: { case: "document", value: { mediaType: "application/pdf", data: new Uint8Array([1]) } },
    };
    const m = [
      msg({ role: Role.USER, content: [doc] }),
      msg({
        role: Role.USER,
        content: [{ block: { case: "toolResult", value: { toolUseId: "t", content: [image] } } }],
      }),
    ];
    expect(() => checkContentSupport({ id: "m", vision: true, documents: true }, m)).not.toThrow();
    try {
      checkContentSupport({ id: "m", vision: false, documents: false }, m);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ModelFailure);
      expect((err as ModelFailure).category).toBe("invalid_request");
      expect((err as ModelFailure).message).toContain("messages[0].content[0]: m does not accept documents");
      expect((err as ModelFailure).message).toContain("messages[1].content[0].tool_result.content[0]");
    }
  });

  it("keeps the vendor total only when it differs from the parts", () => {
    const same = ev.usage({ input: 10, output: 5, cacheRead: 2, vendorTotal: 17 });
    const differs = ev.usage({ input: 10, output: 5, reasoning: 3, vendorTotal: 30 });
    expect(same.event?.case === "usage" && same.event.value.vendorTotalTokens).toBeUndefined();
    expect(differs.event?.case === "usage" && differs.event.value.vendorTotalTokens).toBe(30n);
  });
});

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

describe("SSE", () => {
  it("reads LF and CRLF frames split at arbitrary points", async () => {
    const body = streamOf(["event: a\nda", 'ta: {"x":1}\n\n', "data: é", "\r\n\r\ndata: last\r\n\r\n"]);
    const out = [];
    for await (const e of readSse(body, new AbortController().signal)) out.push(e);
    expect(out.map((e) => [e.event, e.data])).toEqual([
      ["a", '{"x":1}'],
      [undefined, "é"],
      [undefined, "last"],
    ]);
  });

  it("reports a body that breaks off as a retryable transport failure", async () => {
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (pulls++ === 0) c.enqueue(new TextEncoder().encode("data: 1\n\n"));
        else c.error(new TypeError("terminated"));
      },
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const e of readSse(body, new AbortController().signal)) seen.push(e.data);
      })(),
    ).rejects.toMatchObject({ category: "overloaded", retryable: true });
    expect(seen).toEqual(["1"]);
  });

  it("classifies a refused connection as cannot reach <origin>, not retried, never naming credentials", async () => {
    // A port that was free a moment ago and is closed now (fetch refuses port 1 outright).
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await sendVendorRequest({
      url: `http://127.0.0.1:${port}/v1/messages?key=sk-in-url`,
      headers: { "x-api-key": "sk-in-header" },
      body: {},
      signal: new AbortController().signal,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelFailure);
    expect(err).toMatchObject({ category: "overloaded", retryable: false, vendorCode: "unreachable" });
    expect((err as ModelFailure).message).toBe(`cannot reach http://127.0.0.1:${port} (connection refused)`);
    expect((err as ModelFailure).message).not.toMatch(/sk-in/);
  });

  it("says cannot reach <origin> for a host that does not resolve, and keeps a reset retryable", async () => {
    const failing = (code: string) => async () => {
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error(`getaddrinfo ${code}`), { code }),
      });
    };
    const send = (code: string) =>
      sendVendorRequest(
        {
          url: "https://api.example.invalid/v1/chat?key=k",
          headers: {},
          signal: new AbortController().signal,
        },
        failing(code),
      ).catch((e: unknown) => e);
    expect(await send("ENOTFOUND")).toMatchObject({
      category: "overloaded",
      retryable: false,
      vendorCode: "unreachable",
      message: "cannot reach https://api.example.invalid (host not found)",
    });
    expect(await send("EAI_AGAIN")).toMatchObject({
      retryable: false,
      message: expect.stringContaining("lookup failed"),
    });
    expect(await send("ECONNRESET")).toMatchObject({
      category: "overloaded",
      retryable: true,
      vendorCode: "transport_error",
    });
  });

  it("reads an answer with no event in it as an invalid response, not a broken stream", async () => {
    for (const [chunks, what] of [
      [[], /empty body/],
      [["<html>oops</html>\n"], /not an event stream/],
    ] as const) {
      const run = (async () => {
        for await (const _ of readSse(streamOf([...chunks]), new AbortController().signal)) {
          // nothing arrives
        }
      })();
      await expect(run).rejects.toMatchObject({
        category: "unknown",
        retryable: false,
        vendorCode: "invalid_response",
      });
      await expect(run).rejects.toThrow(what);
    }
  });

  it("tells a request larger than the per-minute budget from a budget used up for now", () => {
    expect(
      exceedsRateLimit(
        "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 342389.",
      ),
    ).toBe(true);
    expect(
      exceedsRateLimit(
        "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.",
      ),
    ).toBe(false);
    expect(exceedsRateLimit("limit: 8,000, requested: 34,031")).toBe(true);
    expect(exceedsRateLimit("Please try again in 2s")).toBe(false);
    expect(
      classifyHttpFailure({ status: 429, message: "Request too large for m: Limit 10, Requested 20" }),
    ).toMatchObject({
      category: "rate_limited",
      retryable: false,
    });
    expect(classifyHttpFailure({ status: 429, message: "slow down" }).retryable).toBe(true);
  });
});
