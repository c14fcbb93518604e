// What a run's model requests cost, from the fake vendor's prompt-cache bills (the fake bills
// every request by prefix match the way its vendor does: testing/fake-vendors, "Prompt-cache
// billing"). Each request is priced at its model's list price; a model not listed here is
// reported in tokens only.
import type { BilledUsage, RecordedRequest } from "@pluggableharness/fake-vendors";

/** USD per million tokens. */
interface Rates {
  input: number;
  /** Default-lifetime cache writes (Anthropic 5 minutes). */
  write: number;
  /** Long-lifetime cache writes (Anthropic 1 hour). */
  writeLong: number;
  read: number;
  output: number;
}

// platform.claude.com pricing: Sonnet 4.5 and 4.6 cost the same; writes 1.25x (5 m) and
// 2x (1 h), reads 0.1x. OpenAI gpt-5-codex: cached input 0.1x, writes not billed before GPT-5.6.
const PRICES: Array<[RegExp, Rates]> = [
  [/^claude-sonnet-4-[56]/, { input: 3, write: 3.75, writeLong: 6, read: 0.3, output: 15 }],
  [/^claude-sonnet-5/, { input: 2, write: 2.5, writeLong: 4, read: 0.2, output: 10 }],
  [/^claude-haiku-4-5/, { input: 1, write: 1.25, writeLong: 2, read: 0.1, output: 5 }],
  [/^gpt-5(\.1)?-codex/, { input: 1.25, write: 1.25, writeLong: 1.25, read: 0.125, output: 10 }],
];

export function ratesFor(model: string | undefined): Rates | undefined {
  return model ? PRICES.find(([re]) => re.test(model))?.[1] : undefined;
}

export interface StepBill extends BilledUsage {
  model: string | undefined;
  /** Undefined when the model has no price here. */
  costUsd: number | undefined;
}

export function billOf(r: RecordedRequest): StepBill | undefined {
  const b = r.billed;
  if (!b) return undefined;
  const rates = ratesFor(r.model);
  const costUsd = rates
    ? (b.inputTokens * rates.input +
        b.cacheWriteTokens * rates.write +
        b.cacheWriteLongTokens * rates.writeLong +
        b.cacheReadTokens * rates.read +
        (b.outputTokens + b.reasoningTokens) * rates.output) /
      1e6
    : undefined;
  return { ...b, model: r.model, costUsd };
}

export interface RunBill {
  steps: StepBill[];
  uncached: number;
  written: number;
  read: number;
  total: number;
  costUsd: number | undefined;
  /** What the same requests would cost with no prompt caching at all. */
  uncachedCostUsd: number | undefined;
}

export function billRun(requests: readonly RecordedRequest[]): RunBill {
  const steps = requests.flatMap((r) => {
    const b = billOf(r);
    return b ? [b] : [];
  });
  const sum = (f: (s: StepBill) => number) => steps.reduce((n, s) => n + f(s), 0);
  const priced = steps.every((s) => s.costUsd !== undefined);
  const uncachedCost = steps.map((s) => {
    const rates = ratesFor(s.model);
    return rates
      ? (s.totalTokens * rates.input + (s.outputTokens + s.reasoningTokens) * rates.output) / 1e6
      : NaN;
  });
  return {
    steps,
    uncached: sum((s) => s.inputTokens),
    written: sum((s) => s.cacheWriteTokens + s.cacheWriteLongTokens),
    read: sum((s) => s.cacheReadTokens),
    total: sum((s) => s.totalTokens),
    costUsd: priced && steps.length > 0 ? sum((s) => s.costUsd!) : undefined,
    uncachedCostUsd: priced && steps.length > 0 ? uncachedCost.reduce((a, b) => a + b, 0) : undefined,
  };
}
