// The loopback server: records each request, picks the next scripted response, and renders it
// in the wire format of the endpoint that was called.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { brotliDecompressSync, gunzipSync, inflateSync, zstdDecompressSync } from "node:zlib";
import { DEFAULT_RATE_LIMITS, normalizeTurn } from "./normalize.ts";
import { Prng } from "./prng.ts";
import { type CacheBill, PromptCacheStore } from "./prompt-cache.ts";
import { geminiMinimum, geminiSegments, planFor } from "./prompt-segments.ts";
import { exhausted } from "./ratelimits.ts";
import { describeRequest, extractApiKey, protect } from "./recording.ts";
import { type Route, route, type ServerVendor } from "./router.ts";
import type {
  ErrorResponse,
  RateLimitSpec,
  RawResponse,
  RecordedRequest,
  Rejection,
  Script,
  ScriptEntry,
  ScriptedResponse,
  UsageSpec,
  Validator,
  VendorId,
} from "./types.ts";
import { validateAnthropic } from "./validators/anthropic.ts";
import { validateGemini } from "./validators/gemini.ts";
import { validateChat } from "./validators/openai-chat.ts";
import { validateResponses } from "./validators/openai-responses.ts";
import { anthropic } from "./wire/anthropic.ts";
import type { ErrorLike, Quirks, RenderContext, WireRenderer } from "./wire/common.ts";
import { gemini } from "./wire/gemini.ts";
import { chatRenderer } from "./wire/openai-chat.ts";
import { responsesRenderer } from "./wire/openai-responses.ts";
import { type Frame, writeFrames } from "./writer.ts";

export interface FakeVendorOptions {
  /** Which wire format(s) to serve; `combined` routes by path (see README). */
  vendor: ServerVendor;
  /** The response queue (or function) for model requests. */
  script?: Script;
  /** Combined servers: a separate queue per vendor; requests for other vendors use `script`. */
  scripts?: Partial<Record<VendorId, Script>>;
  /** What answers a model request once the queue is empty (default `error`: a 500 saying so). */
  whenExhausted?: "error" | "repeat-last" | ScriptedResponse;
  /** Combined servers: the dialect of unprefixed `/v1/chat/completions` (default `openai-chat`). */
  chatDialect?: VendorId;
  host?: string;
  port?: number;
  /** Refuse requests the real vendor would refuse: `true` for the built-in validators, or your own. */
  validate?: boolean | Validator;
  /** When set, requests must carry this key in the vendor's auth header, else the vendor's auth error. */
  apiKey?: string;
  /**
   * The model ids this server serves. A request naming any other gets the vendor's own
   * model-not-found answer (404, Mistral 400) without consuming the script. Absent: any id.
   */
  models?: readonly string[];
  /** Rate-limit headers sent with every answer unless a response overrides them (`false`: none). */
  rateLimits?: RateLimitSpec | false;
  /** Headers added to every model answer. */
  headers?: Record<string, string>;
  chunkDelayMs?: number;
  latencyMs?: number;
  quirks?: Partial<Quirks>;
  /** Seeds ids, padding and obfuscation (default 1). */
  seed?: number;
  /** Token count returned by the count-tokens endpoints (default: body length / 4). */
  countTokens?: (request: RecordedRequest) => number;
  /** Called with a one-line, credential-free description of every request. */
  log?: (line: string) => void;
  /**
   * Bill cache reads and writes the way each vendor does, by prefix match against the
   * requests this server has seen (README: "Prompt-cache billing"). Usage a script sets
   * explicitly still wins. `now` is the clock cache lifetimes are measured on.
   */
  promptCache?: boolean | { now?: () => number };
}

export interface FakeVendor {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Model requests (messages, responses, chat, generateContent), in arrival order. */
  readonly requests: RecordedRequest[];
  /** Everything else: HEAD /, count-tokens, model lists, unknown paths. */
  readonly otherRequests: RecordedRequest[];
  /** Gemini explicit caches created and not yet deleted, by name (`cachedContents/…`), as posted. */
  readonly cachedContents: ReadonlyMap<string, Record<string, unknown>>;
  /** The prompt-cache state when `promptCache` is on (a test may `clear()` it to simulate expiry). */
  readonly promptCache: PromptCacheStore | undefined;
  /** Responses still queued in the shared script (Infinity for a function script). */
  readonly remaining: number;
  /** The base URL a vendor SDK should be given (e.g. `<url>/v1` for OpenAI, `<url>/xai/v1` on a combined server). */
  baseUrl(vendor?: VendorId): string;
  /** Appends responses to the shared queue (or to one vendor's queue). */
  push(...entries: ScriptEntry[]): void;
  pushFor(vendor: VendorId, ...entries: ScriptEntry[]): void;
  /** Resolves once at least `n` model requests have been recorded. */
  waitForRequests(n: number): Promise<RecordedRequest[]>;
  /** Resolves when a response is stalled (immediately if one is stalled now). */
  waitForStall(): Promise<void>;
  /** Lets every stalled response continue as its interrupt's `onRelease` says. */
  releaseStalls(): void;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The request's cap on generated tokens, in its vendor's field. */
function outputLimit(
  endpoint: RecordedRequest["endpoint"],
  body: Record<string, unknown>,
): number | undefined {
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
  switch (endpoint) {
    case "messages":
      return n(body.max_tokens);
    case "responses":
      return n(body.max_output_tokens);
    case "chat":
      return n(body.max_completion_tokens) ?? n(body.max_tokens);
    case "gemini": {
      const g = body.generationConfig;
      return typeof g === "object" && g !== null
        ? n((g as Record<string, unknown>).maxOutputTokens)
        : undefined;
    }
    default:
      return undefined;
  }
}

const DEFAULT_QUIRKS: Quirks = { anthropicPadding: true, openaiObfuscation: true, geminiLineEnding: "crlf" };

class Queue {
  private readonly entries: ScriptEntry[];
  private readonly fn: Extract<Script, (...a: never[]) => unknown> | undefined;
  private served = 0;
  last: ScriptedResponse | undefined;

  constructor(script: Script | undefined) {
    this.entries = Array.isArray(script) ? [...script] : [];
    this.fn = typeof script === "function" ? script : undefined;
  }

  get remaining(): number {
    return this.fn ? Number.POSITIVE_INFINITY : this.entries.length;
  }

  push(entries: ScriptEntry[]): void {
    this.entries.push(...entries);
  }

  async next(request: RecordedRequest): Promise<ScriptedResponse | undefined> {
    const n = this.served++;
    let out: ScriptedResponse | undefined;
    if (this.fn) out = await this.fn(request, n);
    else {
      const entry = this.entries.shift();
      out = typeof entry === "function" ? await entry(request) : entry;
    }
    if (out) this.last = out;
    return out;
  }
}

const FIRST_BYTE = Symbol("firstByte");
type TimedSocket = Socket & { [FIRST_BYTE]?: { hrtime: bigint; wallMs: number } };

function now(): { hrtime: bigint; wallMs: number } {
  return { hrtime: process.hrtime.bigint(), wallMs: Date.now() };
}

function queryOf(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) out[k] = v;
  return out;
}

/** Some clients compress request bodies (Codex can send zstd); decode them for parsing. */
function decodeBody(raw: Buffer, encoding: string | undefined): Buffer {
  try {
    switch (encoding?.trim().toLowerCase()) {
      case "gzip":
        return gunzipSync(raw);
      case "deflate":
        return inflateSync(raw);
      case "br":
        return brotliDecompressSync(raw);
      case "zstd":
        return zstdDecompressSync(raw);
      default:
        return raw;
    }
  } catch {
    return raw;
  }
}

const BUILT_IN_VALIDATORS: Partial<Record<RecordedRequest["endpoint"], Validator>> = {
  messages: validateAnthropic,
  responses: validateResponses,
  chat: validateChat,
  gemini: validateGemini,
};

/** Each vendor's answer to a model id it does not serve. */
export function modelNotFound(vendor: VendorId | undefined, model: string): Rejection {
  switch (vendor) {
    case "anthropic":
      return { status: 404, errorType: "not_found_error", message: `model: ${model}` };
    case "gemini":
      return {
        status: 404,
        errorType: "NOT_FOUND",
        message: `models/${model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`,
      };
    case "ollama":
      return {
        status: 404,
        errorType: "not_found_error",
        message: `model "${model}" not found, try pulling it first`,
      };
    case "mistral":
      return { status: 400, errorType: "invalid_model", code: "1500", message: `Invalid model: ${model}` };
    default:
      return {
        status: 404,
        errorType: "invalid_request_error",
        code: "model_not_found",
        message: `The model \`${model}\` does not exist or you do not have access to it.`,
      };
  }
}

function authRejection(
  endpoint: RecordedRequest["endpoint"],
  vendor: VendorId | undefined,
  sent: boolean,
): Rejection {
  if (vendor === "anthropic")
    return {
      status: 401,
      errorType: "authentication_error",
      message: sent ? "invalid x-api-key" : "x-api-key header is required",
    };
  if (vendor === "gemini")
    return sent
      ? {
          status: 400,
          errorType: "INVALID_ARGUMENT",
          message: "API key not valid. Please pass a valid API key.",
        }
      : {
          status: 403,
          errorType: "PERMISSION_DENIED",
          message:
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        };
  void endpoint;
  return {
    status: 401,
    errorType: "invalid_request_error",
    code: sent ? "invalid_api_key" : undefined,
    message: sent
      ? "Incorrect API key provided."
      : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
  };
}

export async function startFakeVendor(options: FakeVendorOptions): Promise<FakeVendor> {
  const rng = new Prng(options.seed ?? 1);
  const cacheClock = typeof options.promptCache === "object" ? options.promptCache.now : undefined;
  const promptCache = options.promptCache ? new PromptCacheStore(cacheClock) : undefined;
  const quirks: Quirks = { ...DEFAULT_QUIRKS, ...options.quirks };
  const chatDialect = options.chatDialect ?? "openai-chat";
  const shared = new Queue(options.script);
  const perVendor = new Map<VendorId, Queue>();
  for (const [v, s] of Object.entries(options.scripts ?? {})) perVendor.set(v as VendorId, new Queue(s));
  const requests: RecordedRequest[] = [];
  const otherRequests: RecordedRequest[] = [];
  const requestWaiters: Array<{ n: number; resolve: (r: RecordedRequest[]) => void }> = [];
  const stalls = new Set<() => void>();
  let stallWaiters: Array<() => void> = [];
  let seq = 0;

  const renderers = new Map<string, WireRenderer>();
  const rendererFor = (r: Route): WireRenderer => {
    const key = `${r.endpoint}:${r.vendor}`;
    let out = renderers.get(key);
    if (!out) {
      if (r.vendor === "anthropic") out = anthropic;
      else if (r.vendor === "gemini") out = gemini;
      else if (
        r.endpoint === "responses" ||
        (r.endpoint === "count_tokens" && r.path.endsWith("/input_tokens"))
      )
        out = responsesRenderer(r.vendor ?? "openai-responses");
      else out = chatRenderer(r.vendor ?? chatDialect);
      renderers.set(key, out);
    }
    return out;
  };

  // Gemini explicit caches: POST …/cachedContents creates one, DELETE …/cachedContents/{id} removes it.
  const cachedContents = new Map<string, Record<string, unknown>>();
  const geminiCachedContents = (
    vendor: ServerVendor,
    method: string,
    path: string,
    body: Record<string, unknown>,
  ): Record<string, unknown> | undefined => {
    if (vendor !== "gemini" && vendor !== "combined") return undefined;
    if (method === "POST" && path.endsWith("/cachedContents")) {
      const name = `cachedContents/${rng.base62(12)}`;
      const ttl = typeof body.ttl === "string" ? Number.parseFloat(body.ttl) : 3600;
      const tokens = geminiSegments(body).reduce((n, s) => n + s.tokens, 0);
      const model = typeof body.model === "string" ? body.model.replace(/^models\//, "") : "";
      const minimum = geminiMinimum(model);
      if (promptCache && tokens < minimum) {
        return {
          status: 400,
          error: {
            code: 400,
            message: `Cached content is too small. total_token_count=${tokens}, min_total_token_count=${minimum}`,
            status: "INVALID_ARGUMENT",
          },
        };
      }
      const now = cacheClock?.() ?? Date.now();
      const entry = {
        name,
        model: body.model,
        createTime: new Date(now).toISOString(),
        expireTime: new Date(now + (Number.isFinite(ttl) ? ttl : 3600) * 1000).toISOString(),
        usageMetadata: { totalTokenCount: Math.max(1, tokens) },
      };
      cachedContents.set(name, { ...body, ...entry });
      return entry;
    }
    const m = /\/(cachedContents\/[^/]+)$/.exec(path);
    if (method === "DELETE" && m) {
      cachedContents.delete(m[1]!);
      return {};
    }
    return undefined;
  };

  const stall = (res: ServerResponse): Promise<void> =>
    new Promise((resolve) => {
      const release = () => {
        stalls.delete(release);
        res.off("close", release);
        resolve();
      };
      stalls.add(release);
      res.once("close", release);
      const waiters = stallWaiters;
      stallWaiters = [];
      for (const w of waiters) w();
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const socket = req.socket as TimedSocket;
    const receivedAt = socket[FIRST_BYTE] ?? now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    // Bytes that arrive from here on belong to the connection's next request.
    socket[FIRST_BYTE] = undefined;
    const bodyCompleteAt = now();
    const rawBody = Buffer.concat(chunks);
    const bodyText = decodeBody(rawBody, req.headers["content-encoding"]).toString("utf8");
    let json: unknown;
    try {
      json = bodyText.length > 0 ? JSON.parse(bodyText) : undefined;
    } catch {
      json = undefined;
    }
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    const query = queryOf(url);
    const r = route(options.vendor, req.method ?? "GET", url.pathname, chatDialect);
    const body =
      typeof json === "object" && json !== null && !Array.isArray(json)
        ? (json as Record<string, unknown>)
        : {};
    const recorded: RecordedRequest = protect({
      seq: seq++,
      vendor: r.vendor,
      endpoint: r.endpoint,
      method: req.method ?? "GET",
      path: r.path,
      url: req.url ?? "/",
      query,
      headers: { ...req.headers },
      apiKey: extractApiKey(req.headers, query),
      rawBody,
      bodyText,
      json,
      stream: r.endpoint === "gemini" ? r.path.endsWith(":streamGenerateContent") : body.stream === true,
      model: r.pathModel ?? (typeof body.model === "string" ? body.model : undefined),
      receivedAt,
      bodyCompleteAt,
    });
    const isModel = r.endpoint !== "other" && r.endpoint !== "count_tokens";
    (isModel ? requests : otherRequests).push(recorded);
    options.log?.(JSON.stringify(describeRequest(recorded)));
    if (isModel) {
      for (const w of [...requestWaiters]) {
        if (requests.length >= w.n) {
          requestWaiters.splice(requestWaiters.indexOf(w), 1);
          w.resolve(requests);
        }
      }
    }

    if (r.endpoint === "other") {
      const cache = geminiCachedContents(options.vendor, req.method ?? "GET", r.path, body);
      const status = typeof cache?.status === "number" ? cache.status : 200;
      const answer = cache && status !== 200 ? { error: cache.error } : cache;
      res.writeHead(status, {
        "content-type": cache ? "application/json; charset=UTF-8" : "application/json",
      });
      res.end(req.method === "HEAD" ? undefined : answer ? JSON.stringify(answer) : "{}");
      return;
    }

    const renderer = rendererFor(r);
    const ctx: RenderContext = {
      vendor: r.vendor!,
      request: recorded,
      body,
      model: recorded.model ?? renderer.defaultModel,
      rng,
      nowMs: Date.now(),
      quirks,
    };

    if (options.apiKey !== undefined && recorded.apiKey !== options.apiKey) {
      recorded.rejected = authRejection(r.endpoint, r.vendor, recorded.apiKey !== undefined);
      return sendError(res, renderer, ctx, {
        kind: "error",
        ...recorded.rejected,
        status: recorded.rejected.status ?? 401,
      });
    }
    if (options.models && !options.models.includes(ctx.model)) {
      recorded.rejected = modelNotFound(r.vendor, ctx.model);
      return sendError(res, renderer, ctx, {
        kind: "error",
        ...recorded.rejected,
        status: recorded.rejected.status ?? 404,
      });
    }
    if (options.validate && isModel) {
      const validator =
        typeof options.validate === "function" ? options.validate : BUILT_IN_VALIDATORS[r.endpoint];
      const rejection = validator?.(recorded);
      if (rejection) {
        recorded.rejected = rejection;
        return sendError(res, renderer, ctx, {
          kind: "error",
          ...rejection,
          status: rejection.status ?? 400,
        });
      }
    }

    if (r.endpoint === "count_tokens") {
      const tokens = options.countTokens?.(recorded) ?? Math.max(1, Math.ceil(bodyText.length / 4));
      return sendJson(res, renderer, ctx, 200, renderer.countTokensBody(tokens, ctx), {});
    }

    // max_tokens 0 pre-warms Anthropic's prompt cache: no generation, so no script entry.
    if (r.endpoint === "messages" && body.max_tokens === 0) {
      return respond(res, renderer, ctx, {
        kind: "turn",
        blocks: [],
        stopReason: "max_tokens",
        usage: { outputTokens: 0, reasoningTokens: 0 },
      });
    }

    // A vendor's own queue answers first; once it is empty the shared script takes over.
    const own = r.vendor ? perVendor.get(r.vendor) : undefined;
    const queue = own && own.remaining > 0 ? own : shared;
    let scripted = await queue.next(recorded);
    if (!scripted) {
      const w = options.whenExhausted ?? "error";
      const last = queue.last ?? own?.last;
      if (w === "repeat-last" && last) scripted = last;
      else if (typeof w === "object") scripted = w;
      else {
        recorded.exhausted = true;
        scripted = {
          kind: "error",
          status: 500,
          shouldRetry: false,
          message: `fake-vendors: the script has no response left for model request #${requests.length - 1}`,
        };
      }
    }
    await respond(res, renderer, ctx, scripted);
  }

  function baseHeaders(
    renderer: WireRenderer,
    ctx: RenderContext,
    rateLimits: RateLimitSpec | false | undefined,
  ) {
    const headers: Record<string, string> = { ...renderer.vendorHeaders(ctx) };
    const requestId = renderer.requestIdHeader ? renderer.newRequestId(ctx) : undefined;
    if (renderer.requestIdHeader && requestId) headers[renderer.requestIdHeader] = requestId;
    const limits = rateLimits === undefined ? (options.rateLimits ?? DEFAULT_RATE_LIMITS) : rateLimits;
    if (limits) Object.assign(headers, renderer.rateLimitHeaders(limits, ctx));
    return { headers, requestId };
  }

  async function sendJson(
    res: ServerResponse,
    renderer: WireRenderer,
    ctx: RenderContext,
    status: number,
    body: unknown,
    extra: Record<string, string>,
  ): Promise<void> {
    const { headers } = baseHeaders(renderer, ctx, undefined);
    const text = JSON.stringify(body);
    res.writeHead(status, {
      ...headers,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...options.headers,
      ...extra,
    });
    res.end(text);
  }

  async function sendError(
    res: ServerResponse,
    renderer: WireRenderer,
    ctx: RenderContext,
    e: ErrorResponse,
  ): Promise<void> {
    const latency = e.latencyMs ?? options.latencyMs ?? 0;
    if (latency > 0) await delay(latency);
    let limits = e.rateLimits === undefined ? (options.rateLimits ?? DEFAULT_RATE_LIMITS) : e.rateLimits;
    if (limits && e.status === 429) limits = exhausted(limits);
    const { headers, requestId } = baseHeaders(renderer, ctx, limits);
    const isGemini = ctx.vendor === "gemini";
    if (e.retryAfterSeconds !== undefined && !isGemini) headers["retry-after"] = String(e.retryAfterSeconds);
    if (e.retryAfterMs !== undefined) headers["retry-after-ms"] = String(e.retryAfterMs);
    if (e.shouldRetry !== undefined) headers["x-should-retry"] = String(e.shouldRetry);
    const errorLike: ErrorLike = { ...e, param: (e as Rejection).param };
    const body = e.body !== undefined ? e.body : renderer.errorBody(errorLike, ctx, requestId);
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(e.status, {
      ...headers,
      "content-type": isGemini ? "application/json; charset=UTF-8" : "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...options.headers,
      ...e.headers,
    });
    res.end(text);
  }

  async function sendRaw(res: ServerResponse, raw: RawResponse): Promise<void> {
    const latency = raw.latencyMs ?? options.latencyMs ?? 0;
    if (latency > 0) await delay(latency);
    res.writeHead(raw.status ?? 200, raw.headers ?? {});
    if (raw.frames) {
      res.flushHeaders();
      await writeFrames(res, raw.frames, {
        chunkDelayMs: raw.chunkDelayMs ?? options.chunkDelayMs,
        splitBytes: raw.splitBytes,
        interrupt: raw.interrupt,
        stall,
      });
    } else if (raw.interrupt || raw.splitBytes || raw.chunkDelayMs) {
      res.flushHeaders();
      await writeFrames(res, raw.body === undefined ? [] : [raw.body], {
        splitBytes: raw.splitBytes,
        interrupt: raw.interrupt,
        stall,
      });
    } else {
      res.end(raw.body);
    }
  }

  async function respond(
    res: ServerResponse,
    renderer: WireRenderer,
    ctx: RenderContext,
    scripted: ScriptedResponse,
  ) {
    switch (scripted.kind) {
      case "hangup":
        res.socket?.destroy();
        return;
      case "stall_before_headers":
        await stall(res);
        res.socket?.destroy();
        return;
      case "raw":
        return sendRaw(res, scripted);
      case "error":
        return sendError(res, renderer, ctx, scripted);
      default:
        break;
    }
    const turn = normalizeTurn(scripted);
    if (promptCache) billPromptCache(turn, (scripted as { usage?: UsageSpec }).usage, ctx);
    const d = turn.delivery;
    if (turn.model) ctx.model = turn.model;
    const stream = turn.stream ?? renderer.isStream(ctx);
    const latency = d.latencyMs ?? options.latencyMs ?? 0;
    if (latency > 0) await delay(latency);
    const { headers } = baseHeaders(renderer, ctx, d.rateLimits);
    const chunkDelayMs = d.chunkDelayMs ?? options.chunkDelayMs ?? 0;

    if (stream) {
      const plan = renderer.stream(turn, ctx);
      res.writeHead(200, {
        ...headers,
        "content-type": plan.contentType,
        "cache-control": "no-cache",
        ...options.headers,
        ...d.headers,
      });
      res.flushHeaders();
      await writeFrames(res, plan.frames, {
        chunkDelayMs,
        splitBytes: d.splitBytes,
        interrupt: d.interrupt,
        errorFrames: (written) => {
          const i = d.interrupt;
          return i?.type === "error"
            ? plan.errorFrames({ errorType: i.errorType, code: i.code, message: i.message }, written)
            : [];
        },
        malformedFrame: plan.malformedFrame,
        stall,
      });
      return;
    }

    const text = JSON.stringify(renderer.json(turn, ctx));
    const contentType = ctx.vendor === "gemini" ? "application/json; charset=UTF-8" : "application/json";
    if (!d.interrupt && !d.splitBytes) {
      res.writeHead(200, {
        ...headers,
        "content-type": contentType,
        "content-length": String(Buffer.byteLength(text)),
        ...options.headers,
        ...d.headers,
      });
      res.end(text);
      return;
    }
    // Interrupts on a JSON answer apply to its body cut in two frames.
    const half = Math.floor(text.length / 2);
    const frames: Frame[] = [text.slice(0, half), text.slice(half)];
    res.writeHead(200, { ...headers, "content-type": contentType, ...options.headers, ...d.headers });
    res.flushHeaders();
    await writeFrames(res, frames, {
      splitBytes: d.splitBytes,
      interrupt: d.interrupt,
      malformedFrame: () => '{"truncated',
      stall,
    });
  }

  /** Fills the turn's input, cache and (capped) output counts from the prefix-cache bill. */
  function billPromptCache(
    turn: ReturnType<typeof normalizeTurn>,
    scripted: UsageSpec | undefined,
    ctx: RenderContext,
  ): void {
    const { request, body } = ctx;
    const plan = request.vendor
      ? planFor(request.endpoint, request.vendor, body, request.model ?? ctx.model, request.headers, (name) =>
          cachedContents.get(name),
        )
      : undefined;
    if (!plan || !promptCache) return;
    let bill: CacheBill;
    if (plan.scope === undefined) {
      const total = plan.segments.reduce((n, s) => n + s.tokens, 0);
      bill = {
        inputTokens: total,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cacheWriteLongTokens: 0,
        totalTokens: total,
      };
    } else bill = promptCache.bill(plan.scope, plan.segments, plan.rule);
    // A named Gemini cache is read whole, whatever implicit caching found.
    const named = typeof body.cachedContent === "string" ? cachedContents.get(body.cachedContent) : undefined;
    if (named) {
      const cachedTokens = geminiSegments(named).reduce((n, s) => n + s.tokens, 0);
      if (cachedTokens > bill.cacheReadTokens) {
        bill = { ...bill, inputTokens: bill.totalTokens - cachedTokens, cacheReadTokens: cachedTokens };
      }
    }
    const u = turn.usage;
    if (scripted?.inputTokens === undefined) u.inputTokens = bill.inputTokens;
    if (scripted?.cacheReadTokens === undefined) u.cacheReadTokens = bill.cacheReadTokens;
    if (scripted?.cacheWriteTokens === undefined) u.cacheWriteTokens = bill.cacheWriteTokens;
    if (scripted?.cacheWrite1hTokens === undefined) u.cacheWrite1hTokens = bill.cacheWriteLongTokens;
    // Generation stops at the request's output limit (thinking counts toward it, and comes first).
    const limit = outputLimit(request.endpoint, body);
    if (limit !== undefined) {
      u.reasoningTokens = Math.min(u.reasoningTokens, limit);
      u.outputTokens = Math.min(u.outputTokens, limit - u.reasoningTokens);
    }
    request.billed = {
      ...bill,
      inputTokens: u.inputTokens,
      cacheReadTokens: u.cacheReadTokens,
      cacheWriteTokens: u.cacheWriteTokens,
      cacheWriteLongTokens: u.cacheWrite1hTokens,
      outputTokens: u.outputTokens,
      reasoningTokens: u.reasoningTokens,
    };
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      options.log?.(`fake-vendors: handler failed: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ error: { message: "fake-vendors internal error", type: "fake_vendor_error" } }),
        );
      } else res.destroy();
    });
  });
  server.on("connection", (socket: TimedSocket) => {
    socket.on("data", () => {
      if (socket[FIRST_BYTE] === undefined) socket[FIRST_BYTE] = now();
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  const queueFor = (vendor: VendorId): Queue => {
    let q = perVendor.get(vendor);
    if (!q) {
      q = new Queue([]);
      perVendor.set(vendor, q);
    }
    return q;
  };

  let closing: Promise<void> | undefined;
  const fake: FakeVendor = {
    url,
    port: address.port,
    requests,
    otherRequests,
    cachedContents,
    promptCache,
    get remaining() {
      return shared.remaining;
    },
    baseUrl(vendor?: VendorId) {
      const v = vendor ?? (options.vendor === "combined" ? "anthropic" : options.vendor);
      if (v === "anthropic" || v === "gemini") return url;
      if (options.vendor === "combined" && v !== "openai-chat" && v !== "openai-responses")
        return `${url}/${v}/v1`;
      return `${url}/v1`;
    },
    push(...entries) {
      shared.push(entries);
    },
    pushFor(vendor, ...entries) {
      queueFor(vendor).push(entries);
    },
    waitForRequests(n) {
      if (requests.length >= n) return Promise.resolve(requests);
      return new Promise((resolve) => requestWaiters.push({ n, resolve }));
    },
    waitForStall() {
      if (stalls.size > 0) return Promise.resolve();
      return new Promise((resolve) => stallWaiters.push(resolve));
    },
    releaseStalls() {
      for (const release of [...stalls]) release();
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const release of [...stalls]) release();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
    [Symbol.asyncDispose]() {
      return fake.close();
    },
  };
  return fake;
}

const only =
  (vendor: VendorId) =>
  (options: Omit<FakeVendorOptions, "vendor"> = {}): Promise<FakeVendor> =>
    startFakeVendor({ ...options, vendor });

/** POST /v1/messages (SSE or JSON, any query such as `?beta=true`) and /v1/messages/count_tokens. */
export const startAnthropicFake = only("anthropic");
/** POST /v1/responses (SSE or JSON) and /v1/responses/input_tokens. */
export const startOpenAIResponsesFake = only("openai-responses");
/** POST /v1/chat/completions in OpenAI's dialect. */
export const startOpenAIChatFake = only("openai-chat");
/** POST /v1beta/models/{model}:streamGenerateContent | :generateContent | :countTokens. */
export const startGeminiFake = only("gemini");
/** xAI's /v1/chat/completions and /v1/responses. */
export const startXaiFake = only("xai");

/** A Chat Completions server in one of the OpenAI-compatible dialects. */
export function startOpenAICompatibleFake(
  dialect: "ollama" | "vllm" | "lmstudio" | "mistral" | "openai-chat" | "xai" | "deepseek",
  options: Omit<FakeVendorOptions, "vendor"> = {},
): Promise<FakeVendor> {
  return startFakeVendor({ ...options, vendor: dialect });
}

/** Every wire format on one port, routed by path; `/<vendor>/v1/...` selects a dialect. */
export const startCombinedFake = (options: Omit<FakeVendorOptions, "vendor"> = {}): Promise<FakeVendor> =>
  startFakeVendor({ ...options, vendor: "combined" });
