// Chat Completions usage in OpenAI's accounting, and exact decimal text for vendor-reported
// amounts. The canonical counters do not overlap (a cached token is not also an input token),
// so cached prompt tokens are taken out of prompt_tokens. Reasoning tokens that a vendor
// folds into completion_tokens stay there: without an explicit signal they are reported as a
// component, never as reasoning_tokens, so nothing is billed twice.
import type { UsageInit } from "@pluggableharness/model-kit";
import { ChatUsage, Count, UsageDetails } from "./chat-wire-schema.ts";

/** A token count the vendor reported, as a whole number; undefined for anything else. */
export const num = (v: unknown): number | undefined => {
  const r = Count.safeParse(v);
  return r.success && r.data !== undefined ? Math.trunc(r.data) : undefined;
};

/** Non-zero numeric fields of `details`, named `<prefix>.<field>`, except the `skip` ones. */
export function detailComponents(
  prefix: string,
  details: unknown,
  skip: readonly string[] = [],
): Array<{ name: string; value: number }> {
  const out: Array<{ name: string; value: number }> = [];
  for (const [k, v] of Object.entries(UsageDetails.parse(details) ?? {})) {
    const n = num(v);
    if (n !== undefined && n > 0 && !skip.includes(k)) out.push({ name: `${prefix}.${k}`, value: n });
  }
  return out;
}

/**
 * OpenAI-style chat usage: completion_tokens includes any reasoning. `caching` says whether
 * the model declares caching (and so has a cache-read rate); without it, cached prompt
 * tokens stay inside input_tokens and are only reported as a component, because the kernel
 * cannot price a cache read the model never declared.
 */
export function chatUsage(usage: unknown, options: { caching: boolean } = { caching: true }): UsageInit {
  // Never throws: a field of the wrong type reads as absent (ChatUsage catches it), so a
  // string "60" cached_tokens neither splits the cache read out nor counts as a component.
  const u = ChatUsage.safeParse(usage).data ?? {};
  const prompt = num(u.prompt_tokens) ?? 0;
  const promptDetails = u.prompt_tokens_details ?? {};
  const cached = num(promptDetails.cached_tokens) ?? 0;
  const split = options.caching && promptDetails.cached_tokens !== undefined;
  // GPT-5.6 and later also report (and bill) cache writes, inside prompt_tokens.
  const written = num(promptDetails.cache_write_tokens) ?? 0;
  const splitWrites = options.caching && promptDetails.cache_write_tokens !== undefined;
  const total = num(u.total_tokens);
  return {
    input: Math.max(0, prompt - (split ? cached : 0) - (splitWrites ? written : 0)),
    output: num(u.completion_tokens) ?? 0,
    ...(split ? { cacheRead: cached } : {}),
    ...(splitWrites ? { cacheWrite: written } : {}),
    components: [
      ...detailComponents("prompt_tokens_details", promptDetails, [
        ...(split ? ["cached_tokens"] : []),
        ...(splitWrites ? ["cache_write_tokens"] : []),
      ]),
      ...detailComponents("completion_tokens_details", u.completion_tokens_details),
    ],
    ...(total !== undefined ? { vendorTotal: total } : {}),
  };
}

/**
 * The JSON number written for `field` in a raw frame, as plain decimal text (exponents
 * expanded), so an amount is never passed through binary floating point. Undefined when the
 * field is absent or not a number.
 */
export function decimalText(rawJson: string, field: string): string | undefined {
  const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`"${escaped}"\\s*:\\s*(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)`).exec(rawJson);
  if (!m) return undefined;
  return plainDecimal(m[1]!);
}

/** "1.5e3" -> "1500", "12.50" -> "12.5", "-0.0" -> "0". */
export function plainDecimal(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) throw new Error(`not a decimal number: ${text}`);
  const sign = m[1]!;
  let digits = m[2]! + (m[3] ?? "");
  let point = m[2]!.length + Number(m[4] ?? "0");
  if (point < 0) {
    digits = "0".repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += "0".repeat(point - digits.length);
  let int = digits.slice(0, point).replace(/^0+/, "") || "0";
  const frac = digits.slice(point).replace(/0+$/, "");
  if (int === "0" && frac === "") return "0";
  int = sign + int;
  return frac === "" ? int : `${int}.${frac}`;
}
