// The record as the stores keep it, and the pure rules every write follows: slugs,
// `[[name]]` links, the fixed taxonomy's names, and the secret check.
import { isMemorySlug, memorySlug } from "@pluggableharness/plugin-sdk";

export const TYPES = ["user", "feedback", "project", "reference"] as const;
export type TypeName = (typeof TYPES)[number];
export const SCOPES = ["session", "project", "global"] as const;
export type ScopeName = (typeof SCOPES)[number];

export interface StoredRecord {
  id: string;
  type: TypeName;
  scope: ScopeName;
  title: string;
  /** The record's text (text-only in v1). */
  content: string;
  status: "canonical" | "pending";
  links: string[];
  /** ISO 8601. */
  createdAt: string;
  updatedAt: string;
  provenance: { sourceSessionId: string; sourceTurnId?: string; recordedBy: string };
}

/** Record ids follow the memory protocol's slug rule (plugin-sdk's memory-ids.ts). */
export { isMemorySlug as isSlug, memorySlug as slugify };

/** `base`, else `base-2`, `base-3`, ... : the first one not taken. */
export function uniqueSlug(base: string, taken: (id: string) => boolean): string {
  if (!taken(base)) return base;
  for (let n = 2; ; n++) if (!taken(`${base}-${n}`)) return `${base}-${n}`;
}

/** The `[[name]]` targets in `text`, in first-appearance order, deduplicated. */
export function parseLinks(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\[\[([^\]\n]{1,128})\]\]/g)) {
    const id = memorySlug(m[1]!);
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

/**
 * Well-known credential shapes. Memory outlives the session and is read back into every
 * later prompt, so a record that holds one is refused, never stored (the kernel refuses
 * the values of the environment's secrets before the call gets here).
 */
const SECRET_SHAPES: readonly [string, RegExp][] = [
  ["an Anthropic API key", /sk-ant-[A-Za-z0-9_-]{16,}/],
  ["an OpenAI API key", /\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}/],
  ["an xAI API key", /\bxai-[A-Za-z0-9]{20,}/],
  ["a Google API key", /\bAIza[0-9A-Za-z_-]{35}/],
  ["an AWS access key id", /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/],
  ["a GitHub token", /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/],
  ["a GitLab token", /\bglpat-[A-Za-z0-9_-]{20,}/],
  ["a Slack token", /\bxox[abprs]-[A-Za-z0-9-]{10,}/],
  ["a private key", /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----/],
  ["a JSON web token", /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/],
];

/** What kind of secret `text` appears to hold, or undefined. Never returns the match itself. */
export function secretKind(text: string): string | undefined {
  return SECRET_SHAPES.find(([, re]) => re.test(text))?.[0];
}

/** Word-ish terms of a query or a path, lower-case, without very short ones. */
export function terms(text: string): string[] {
  return [
    ...new Set(
      text
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter((t) => t.length >= 3),
    ),
  ];
}

/** Similarity of two short strings in [0, 1] (Dice coefficient over character bigrams). */
export function similarity(a: string, b: string): number {
  const grams = (s: string) => {
    const t = s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, " ")
      .trim();
    const g = new Map<string, number>();
    for (let i = 0; i < t.length - 1; i++) g.set(t.slice(i, i + 2), (g.get(t.slice(i, i + 2)) ?? 0) + 1);
    return g;
  };
  const x = grams(a);
  const y = grams(b);
  let both = 0;
  let total = 0;
  for (const [k, n] of x) {
    both += Math.min(n, y.get(k) ?? 0);
    total += n;
  }
  for (const n of y.values()) total += n;
  return total === 0 ? 0 : (2 * both) / total;
}
