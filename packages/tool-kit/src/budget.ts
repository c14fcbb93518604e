// Token budgets for context and memory providers: counting through the kernel's CountTokens
// callback (never a local estimate, as the context protocol requires), the reserved
// `token_budget` attribute every such provider accepts, and cutting a text at a line
// boundary to the longest prefix that fits.
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import type { ModelTarget } from "@pluggableharness/protocol/model";
import { type ConfigField, configError, type Diagnostic } from "./config.ts";

/** agent.hcl's per-provider cap, read by the kernel; declared so `agent validate` checks it. */
export const TOKEN_BUDGET_FIELD: ConfigField = {
  name: "token_budget",
  type: "number",
  default: 0,
  description:
    "Token cap for this provider's contribution per turn; 0 (the default) keeps the provider's own.",
};

/** Problems with a decoded token_budget (absent, decoded as 0, is fine). */
export function checkTokenBudget(value: unknown): Diagnostic[] {
  if (value === undefined || value === null) return [];
  return typeof value === "number" && Number.isInteger(value) && value >= 0
    ? []
    : [
        configError(
          ["token_budget"],
          "token_budget must be a whole number of tokens (0: the provider's default)",
        ),
      ];
}

export type TokenCounter = (text: string) => Promise<number>;

/** Exact counts already answered, per model and text, shared by every counter of the process. */
const exactCounts = new Map<string, number>();
const MAX_CACHED_COUNTS = 4096;

/**
 * Counts text for `target` through the kernel. Exact answers for a named model are kept (the
 * same records and files come back every turn; asking again costs a callback round trip for
 * the same answer); estimates are not (the kernel may have an exact count next time).
 */
export function tokenCounter(kernel: KernelClient, target: ModelTarget | undefined): TokenCounter {
  const model = target?.id ? `${target.provider}/${target.id}` : "";
  return async (text) => {
    const key = `${model}\u0000${text}`;
    const known = model ? exactCounts.get(key) : undefined;
    if (known !== undefined) return known;
    const res = await kernel.countTokens({
      content: [{ block: { case: "text", value: { text } } }],
      ...(target?.id ? { modelRef: { provider: target.provider, id: target.id } } : {}),
    });
    const n = Number(res.count);
    if (res.exact && model) {
      if (exactCounts.size >= MAX_CACHED_COUNTS) exactCounts.delete(exactCounts.keys().next().value!);
      exactCounts.set(key, n);
    }
    return n;
  };
}

/**
 * The longest prefix of whole lines, followed by `note`, whose count fits `room`; undefined
 * when not even the first line does.
 */
export async function fitLines(
  text: string,
  room: number,
  count: TokenCounter,
  note = "\n[truncated to fit the context budget]",
): Promise<{ text: string; tokens: number } | undefined> {
  const lines = text.split("\n");
  let lo = 0;
  let hi = lines.length - 1;
  let best: { text: string; tokens: number } | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const candidate = lines.slice(0, mid + 1).join("\n") + note;
    const tokens = await count(candidate);
    if (tokens <= room) {
      best = { text: candidate, tokens };
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}
