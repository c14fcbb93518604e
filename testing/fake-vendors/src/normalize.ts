// Turns the shorthand script forms into one normalized turn that every renderer consumes.
import type {
  BlockSpec,
  DeliveryOptions,
  RateLimitSpec,
  ScriptedResponse,
  StopReason,
  TurnOptions,
  UsageSpec,
} from "./types.ts";

export interface NText {
  type: "text";
  text: string;
  deltas: string[];
  phase?: "commentary" | "final_answer" | undefined;
}
export interface NThinking {
  type: "thinking";
  text: string;
  deltas: string[];
  signature: string | undefined;
}
export interface NRedacted {
  type: "redacted_thinking";
  data: string;
}
export interface NToolCall {
  type: "tool_call";
  name: string;
  id: string | undefined;
  argsJson: string;
  fragments: string[];
  signature: string | undefined;
}
export type NBlock = NText | NThinking | NRedacted | NToolCall;

export type NUsage = Required<Omit<UsageSpec, "serviceTier">> & { serviceTier: string | undefined };

export interface NormalizedTurn {
  blocks: NBlock[];
  stopReason: StopReason;
  vendorStopReason: string | undefined;
  stopSequence: string | undefined;
  refusal: { category?: string; explanation?: string } | undefined;
  usage: NUsage;
  model: string | undefined;
  id: string | undefined;
  stream: boolean | undefined;
  delivery: DeliveryOptions;
}

/** Splits text into `n` non-empty pieces of near-equal length, never inside a surrogate pair. */
export function splitText(text: string, n: number): string[] {
  if (text.length === 0) return [""];
  const cps = Array.from(text);
  const count = Math.max(1, Math.min(Math.floor(n) || 1, cps.length));
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const start = Math.floor((i * cps.length) / count);
    const end = Math.floor(((i + 1) * cps.length) / count);
    out.push(cps.slice(start, end).join(""));
  }
  return out;
}

function normalizeBlock(block: BlockSpec): NBlock {
  switch (block.type) {
    case "text":
      return {
        type: "text",
        text: block.deltas?.join("") ?? block.text,
        deltas: block.deltas ?? splitText(block.text, block.chunks ?? 1),
        phase: block.phase,
      };
    case "thinking":
      return {
        type: "thinking",
        text: block.deltas?.join("") ?? block.text,
        deltas: block.deltas ?? splitText(block.text, block.chunks ?? 1),
        signature: block.signature,
      };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_call": {
      const argsJson = block.argFragments
        ? block.argFragments.join("")
        : typeof block.args === "string"
          ? block.args
          : JSON.stringify(block.args ?? {});
      return {
        type: "tool_call",
        name: block.name,
        id: block.id,
        argsJson,
        fragments: block.argFragments ?? splitText(argsJson, block.fragments ?? 1),
        signature: block.signature,
      };
    }
  }
}

function deltaCount(blocks: NBlock[], kind: "visible" | "thinking"): number {
  let n = 0;
  for (const b of blocks) {
    if (kind === "thinking" ? b.type === "thinking" : b.type === "text") n += (b as NText).deltas.length;
    if (kind === "visible" && b.type === "tool_call") n += b.fragments.length;
  }
  return n;
}

export function normalizeUsage(spec: UsageSpec | undefined, blocks: NBlock[]): NUsage {
  return {
    inputTokens: spec?.inputTokens ?? 10,
    outputTokens: spec?.outputTokens ?? Math.max(1, deltaCount(blocks, "visible")),
    cacheReadTokens: spec?.cacheReadTokens ?? 0,
    cacheWriteTokens: spec?.cacheWriteTokens ?? 0,
    cacheWrite1hTokens: spec?.cacheWrite1hTokens ?? 0,
    reasoningTokens: spec?.reasoningTokens ?? deltaCount(blocks, "thinking"),
    costInUsdTicks: spec?.costInUsdTicks ?? 0,
    serviceTier: spec?.serviceTier,
  };
}

type TurnLike = Extract<ScriptedResponse, { kind: "text" | "tool_calls" | "turn" }>;

export function normalizeTurn(response: TurnLike): NormalizedTurn {
  let blocks: NBlock[];
  if (response.kind === "text") {
    blocks = [
      normalizeBlock({ type: "text", text: response.text, chunks: response.chunks, deltas: response.deltas }),
    ];
  } else if (response.kind === "tool_calls") {
    blocks = [];
    if (response.text !== undefined) blocks.push(normalizeBlock({ type: "text", text: response.text }));
    for (const call of response.calls) blocks.push(normalizeBlock({ type: "tool_call", ...call }));
  } else {
    blocks = response.blocks.map(normalizeBlock);
  }
  const opts: TurnOptions = response;
  const hasTool = blocks.some((b) => b.type === "tool_call");
  return {
    blocks,
    stopReason: opts.stopReason ?? (opts.refusal ? "refusal" : hasTool ? "tool_use" : "end_turn"),
    vendorStopReason: opts.vendorStopReason,
    stopSequence: opts.stopSequence,
    refusal: opts.refusal,
    usage: normalizeUsage(opts.usage, blocks),
    model: opts.model,
    id: opts.id,
    stream: opts.stream,
    delivery: {
      headers: opts.headers,
      rateLimits: opts.rateLimits,
      chunkDelayMs: opts.chunkDelayMs,
      latencyMs: opts.latencyMs,
      splitBytes: opts.splitBytes,
      interrupt: opts.interrupt,
    },
  };
}

// Priority Tier budgets exist only for organisations with a commitment, so none by default.
export const DEFAULT_RATE_LIMITS: Required<
  Omit<RateLimitSpec, "priorityInputTokens" | "priorityOutputTokens">
> = {
  requests: { limit: 1000, remaining: 999, resetSeconds: 1 },
  tokens: { limit: 96000, remaining: 90000, resetSeconds: 2 },
  inputTokens: { limit: 80000, remaining: 78000, resetSeconds: 2 },
  outputTokens: { limit: 16000, remaining: 12000, resetSeconds: 17 },
};
