// Builders for StreamEvent init values, so adapters read as a list of what happened.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  RateLimitSnapshot,
  SafetyKind,
  StopReason,
  StreamEventSchema,
  UsageComponent,
} from "@pluggableharness/protocol/model";

export type StreamEventInit = MessageInitShape<typeof StreamEventSchema>;

const utf8 = new TextEncoder();

export const ev = {
  start: (providerRequestId: string): StreamEventInit => ({
    event: { case: "streamStart", value: { providerRequestId } },
  }),
  text: (text: string): StreamEventInit => ({ event: { case: "textDelta", value: { text } } }),
  /**
   * The first delta of a text block the vendor delimits itself (possibly empty), with its
   * opaque per-block state (a string, stored as its UTF-8 bytes) when there is one.
   */
  textBlock: (text: string, vendorState?: string): StreamEventInit => ({
    event: {
      case: "textDelta",
      value: {
        text,
        startsBlock: true,
        ...(vendorState !== undefined ? { vendorState: utf8.encode(vendorState) } : {}),
      },
    },
  }),
  thinking: (text: string): StreamEventInit => ({ event: { case: "thinkingDelta", value: { text } } }),
  /** A vendor signature string, stored as its UTF-8 bytes (see opaqueToBytes). */
  signature: (signature: string): StreamEventInit => ({
    event: { case: "thinkingSignature", value: { signature: utf8.encode(signature) } },
  }),
  redacted: (data: string): StreamEventInit => ({
    event: { case: "redactedThinking", value: { data: utf8.encode(data) } },
  }),
  toolStart: (id: string, name: string): StreamEventInit => ({
    event: { case: "toolCallStart", value: { id, name } },
  }),
  toolDelta: (id: string, argumentsFragment: string): StreamEventInit => ({
    event: { case: "toolCallDelta", value: { id, argumentsFragment } },
  }),
  toolDone: (id: string): StreamEventInit => ({ event: { case: "toolCallDone", value: { id } } }),
  stop: (reason: StopReason, matchedStopSequence?: string, modelAffirmed = true): StreamEventInit => ({
    event: {
      case: "stop",
      value: { reason, modelAffirmed, ...(matchedStopSequence !== undefined ? { matchedStopSequence } : {}) },
    },
  }),
  metadata: (m: {
    actualModel?: string;
    serviceTier?: string;
    systemFingerprint?: string;
    rateLimits?: RateLimitSnapshot[];
    liveContextWindow?: bigint;
    liveMaxOutputTokens?: bigint;
    attrs?: Record<string, string>;
  }): StreamEventInit => ({ event: { case: "metadata", value: m } }),
  safety: (kind: SafetyKind, message?: string, attrs: Record<string, string> = {}): StreamEventInit => ({
    event: { case: "safetyNotice", value: { kind, attrs, ...(message !== undefined ? { message } : {}) } },
  }),
  usage: (u: UsageInit): StreamEventInit => ({ event: { case: "usage", value: usageValue(u) } }),
};

export interface UsageInit {
  input: number | bigint;
  output: number | bigint;
  cacheRead?: number | bigint | undefined;
  cacheWrite?: number | bigint | undefined;
  /** Only a count the vendor reports apart from output (never derived by subtraction). */
  reasoning?: number | bigint | undefined;
  /** Only on an explicit vendor signal that reasoning is inside output. */
  reasoningAlreadyCounted?: boolean | undefined;
  rateLimits?: RateLimitSnapshot[];
  /** The vendor's total; kept only when it differs from the sum of the reported parts. */
  vendorTotal?: number | bigint | undefined;
  components?: Array<{ name: string; value: number | bigint }>;
  vendorCost?: { amount: string; unit: string; currency?: string };
  /** Explicit-cache storage the vendor bills: cached tokens x seconds stored. */
  cacheStorageTokenSeconds?: number | bigint | undefined;
}

const big = (n: number | bigint) => (typeof n === "bigint" ? n : BigInt(Math.trunc(n)));

function usageValue(u: UsageInit) {
  const parts =
    big(u.input) +
    big(u.output) +
    big(u.cacheRead ?? 0) +
    big(u.cacheWrite ?? 0) +
    (u.reasoningAlreadyCounted ? 0n : big(u.reasoning ?? 0));
  const total = u.vendorTotal === undefined ? undefined : big(u.vendorTotal);
  const components: Array<Pick<UsageComponent, "name" | "value">> = (u.components ?? []).map((c) => ({
    name: c.name,
    value: big(c.value),
  }));
  return {
    inputTokens: big(u.input),
    outputTokens: big(u.output),
    ...(u.cacheRead !== undefined ? { cacheReadTokens: big(u.cacheRead) } : {}),
    ...(u.cacheWrite !== undefined ? { cacheWriteTokens: big(u.cacheWrite) } : {}),
    ...(u.reasoning !== undefined ? { reasoningTokens: big(u.reasoning) } : {}),
    ...(u.reasoningAlreadyCounted !== undefined
      ? { reasoningAlreadyCounted: u.reasoningAlreadyCounted }
      : {}),
    rateLimits: u.rateLimits ?? [],
    ...(total !== undefined && total !== parts ? { vendorTotalTokens: total } : {}),
    components,
    ...(u.vendorCost ? { vendorCost: u.vendorCost } : {}),
    ...(u.cacheStorageTokenSeconds !== undefined
      ? { cacheStorageTokenSeconds: big(u.cacheStorageTokenSeconds) }
      : {}),
  };
}
