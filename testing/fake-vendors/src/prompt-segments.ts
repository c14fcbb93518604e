// A request's prompt as the content blocks its vendor caches by, in the vendor's prefix
// order, with the breakpoints it carries, and the caching rule that vendor applies to it.
// prompt-cache.ts does the billing; the facts behind each rule are in the README
// ("Prompt-cache billing").
import { type CacheRule, type CacheSegment, estimateTokens } from "./prompt-cache.ts";
import type { Endpoint, RecordedRequest, VendorId } from "./types.ts";

type Json = Record<string, unknown>;

export interface PromptPlan {
  /** Entries are shared only within one scope (model, routing key); undefined: nothing is cached. */
  scope: string | undefined;
  segments: CacheSegment[];
  rule: CacheRule;
}

const obj = (v: unknown): Json =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** JSON with sorted keys and the given marker keys removed, so markers never change a prefix. */
export function canonical(value: unknown, omit: readonly string[] = []): string {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== "object") return v;
    const out: Json = {};
    for (const k of Object.keys(v as Json).sort()) {
      if (omit.includes(k)) continue;
      out[k] = walk((v as Json)[k]);
    }
    return out;
  };
  return JSON.stringify(walk(value)) ?? "";
}

function segment(label: string, block: unknown, role: CacheSegment["role"], omit: string[]): CacheSegment {
  const body = canonical(block, omit);
  return { text: `${label} ${body}`, tokens: estimateTokens(body), role };
}

// Anthropic: the smallest cacheable prefix per model (platform.claude.com prompt caching,
// "Cache limitations"; the Opus 4.8 and Sonnet 5 announcements).
function anthropicMinimum(model: string): number {
  if (/^claude-(opus-4-[5-7]|haiku-4-5)/.test(model)) return 4096;
  if (/^claude-(sonnet-4-6|haiku-3)/.test(model)) return 2048;
  if (/^claude-(opus|mythos|fable)-5/.test(model)) return 512;
  return 1024;
}

function anthropicTtl(marker: unknown): "5m" | "1h" | undefined {
  const m = obj(marker);
  if (m.type !== "ephemeral") return undefined;
  return m.ttl === "1h" ? "1h" : "5m";
}

/** Anthropic Messages: tools, then system, then message blocks; markers from cache_control. */
export function anthropicPlan(body: Json, model: string): PromptPlan {
  const segments: CacheSegment[] = [];
  const omit = ["cache_control"];
  const add = (s: CacheSegment, marker: unknown) => {
    const ttl = anthropicTtl(marker);
    segments.push(ttl ? { ...s, mark: { ttl } } : s);
  };
  for (const tool of arr(body.tools))
    add(segment("tool", tool, "tool-definition", omit), obj(tool).cache_control);
  const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : arr(body.system);
  for (const block of system) add(segment("system", block, "system", omit), obj(block).cache_control);
  // Thinking and tool_choice settings are part of the message prefix: changing them
  // invalidates cached messages but not tools or system.
  const messageContext = canonical({
    thinking: body.thinking ?? null,
    tool_choice: body.tool_choice ?? null,
  });
  let first = true;
  for (const message of arr(body.messages)) {
    const m = obj(message);
    const role = m.role === "assistant" ? "assistant" : "user";
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : arr(m.content);
    for (const block of blocks) {
      const b = obj(block);
      const kind = role === "assistant" ? "assistant" : b.type === "tool_result" ? "tool-result" : "user";
      const s = segment(role, block, kind, omit);
      if (first) s.text = `${messageContext}\n${s.text}`;
      first = false;
      add(s, b.cache_control);
    }
  }
  // Request-level cache_control marks the last cacheable block.
  const auto = anthropicTtl(body.cache_control);
  const last = segments.at(-1);
  if (auto && last && !last.mark) last.mark = { ttl: auto };
  return {
    scope: `anthropic:${model}`,
    segments,
    rule: { kind: "explicit", minTokens: anthropicMinimum(model), lookback: 20 },
  };
}

/** GPT-5.6 and later models write cache entries at breakpoints (and bill the writes). */
export function openaiBreakpointModel(model: string): boolean {
  const m = /^gpt-(\d+)\.(\d+)/.exec(model);
  if (!m) return false;
  const major = Number(m[1]);
  return major > 5 || (major === 5 && Number(m[2]) >= 6);
}

function openaiRule(body: Json, model: string): CacheRule {
  if (openaiBreakpointModel(model)) {
    const options = obj(body.prompt_cache_options);
    return {
      kind: "implicit-breakpoints",
      minTokens: 1024,
      ttlMs: options.ttl === "12h" ? 12 * 3_600_000 : 30 * 60_000,
      explicitOnly: options.mode === "explicit",
    };
  }
  return {
    kind: "automatic",
    minTokens: 1024,
    blockTokens: 128,
    ttlMs: body.prompt_cache_retention === "24h" ? 24 * 3_600_000 : 10 * 60_000,
  };
}

const OPENAI_MARK = ["prompt_cache_breakpoint"];

function openaiPart(
  label: string,
  part: unknown,
  role: CacheSegment["role"],
  requestTtl: unknown,
): CacheSegment {
  const s = segment(label, part, role, OPENAI_MARK);
  const bp = obj(obj(part).prompt_cache_breakpoint);
  if (bp.mode === "explicit") s.mark = { ttl: (bp.ttl ?? requestTtl) === "12h" ? "12h" : "30m" };
  return s;
}

function messageRole(role: unknown): CacheSegment["role"] {
  if (role === "assistant") return "assistant";
  if (role === "system" || role === "developer") return "system";
  if (role === "tool") return "tool-result";
  return "user";
}

/** OpenAI Responses: tools, instructions, then input items (messages part by part). */
export function responsesPlan(
  body: Json,
  model: string,
  vendor: VendorId,
  headers: RecordedRequest["headers"],
): PromptPlan {
  const ttl = obj(body.prompt_cache_options).ttl;
  const segments: CacheSegment[] = [];
  for (const tool of arr(body.tools)) segments.push(segment("tool", tool, "tool-definition", []));
  if (typeof body.instructions === "string" && body.instructions)
    segments.push(segment("instructions", body.instructions, "system", []));
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : arr(body.input);
  for (const item of input) {
    const it = obj(item);
    const type = it.type ?? "message";
    if (type === "message") {
      const role = messageRole(it.role);
      const parts =
        typeof it.content === "string" ? [{ type: "input_text", text: it.content }] : arr(it.content);
      for (const part of parts) segments.push(openaiPart(String(it.role ?? "user"), part, role, ttl));
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      segments.push(segment(String(type), item, "tool-result", []));
    } else segments.push(segment(String(type), item, "assistant", []));
  }
  return withScope(vendor, model, body, headers, segments, openaiRule(body, model));
}

/** Chat Completions: tools, then messages (content part by part). */
export function chatPlan(
  body: Json,
  model: string,
  vendor: VendorId,
  headers: RecordedRequest["headers"],
): PromptPlan {
  const segments: CacheSegment[] = [];
  for (const tool of arr(body.tools)) segments.push(segment("tool", tool, "tool-definition", []));
  for (const message of arr(body.messages)) {
    const m = obj(message);
    const role = messageRole(m.role);
    const { content, ...rest } = m;
    if (Array.isArray(content)) {
      segments.push(segment(String(m.role), rest, role, []));
      for (const part of content) segments.push(openaiPart(String(m.role), part, role, undefined));
    } else segments.push(segment(String(m.role), m, role, []));
  }
  return withScope(vendor, model, body, headers, segments, openaiRule(body, model));
}

function withScope(
  vendor: VendorId,
  model: string,
  body: Json,
  headers: RecordedRequest["headers"],
  segments: CacheSegment[],
  rule: CacheRule,
): PromptPlan {
  if (vendor === "xai") {
    // xAI keeps caches per server; x-grok-conv-id (chat) or prompt_cache_key (responses) is
    // what routes a conversation back to the same one. Without either, the fake assumes a
    // different server every time: no hits.
    const conv = headers["x-grok-conv-id"] ?? body.prompt_cache_key;
    return {
      scope: typeof conv === "string" && conv ? `xai:${model}:${conv}` : undefined,
      segments,
      rule: { kind: "automatic", minTokens: 0, ttlMs: 10 * 60_000 },
    };
  }
  if (vendor !== "openai-responses" && vendor !== "openai-chat") {
    // Local OpenAI-compatible servers: no billing of cache traffic.
    return { scope: undefined, segments, rule };
  }
  const key = typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : "";
  return { scope: `openai:${model}:${key}`, segments, rule };
}

// Gemini: implicit caching's minimum prompt size per model (ai.google.dev context caching).
export function geminiMinimum(model: string): number {
  return /pro/.test(model) ? 4096 : 1024;
}

/** The blocks of a Gemini CachedContent or GenerateContent body, in prompt order. */
export function geminiSegments(body: Json): CacheSegment[] {
  const segments: CacheSegment[] = [];
  for (const part of arr(obj(body.systemInstruction).parts))
    segments.push(segment("system", part, "system", []));
  for (const tool of arr(body.tools)) segments.push(segment("tool", tool, "tool-definition", []));
  if (body.toolConfig !== undefined) segments.push(segment("toolConfig", body.toolConfig, "other", []));
  for (const content of arr(body.contents)) {
    const c = obj(content);
    for (const part of arr(c.parts)) {
      const p = obj(part);
      const role = c.role === "model" ? "assistant" : p.functionResponse ? "tool-result" : "user";
      segments.push(segment(String(c.role ?? "user"), part, role, []));
    }
  }
  return segments;
}

/**
 * Gemini generateContent: implicit caching over the whole prompt; a named CachedContent is
 * the head of that prompt and is always read (its tokens are `cached`).
 */
export function geminiPlan(body: Json, model: string, cached: Json | undefined): PromptPlan {
  const segments = [...(cached ? geminiSegments(cached) : []), ...geminiSegments(body)];
  return {
    scope: `gemini:${model}`,
    segments,
    rule: { kind: "automatic", minTokens: geminiMinimum(model), ttlMs: 5 * 60_000 },
  };
}

export function planFor(
  endpoint: Endpoint,
  vendor: VendorId,
  body: Json,
  model: string,
  headers: RecordedRequest["headers"],
  cachedContent: (name: string) => Json | undefined,
): PromptPlan | undefined {
  switch (endpoint) {
    case "messages":
      return anthropicPlan(body, model);
    case "responses":
      return responsesPlan(body, model, vendor, headers);
    case "chat":
      return chatPlan(body, model, vendor, headers);
    case "gemini": {
      const name = typeof body.cachedContent === "string" ? body.cachedContent : undefined;
      return geminiPlan(body, model, name ? cachedContent(name) : undefined);
    }
    default:
      return undefined;
  }
}
