// Masks the secrets the block passed to the server (header values, and env values under a
// secret-looking name: tokens, keys, passwords) in any
// text the bridge lets out — errors, log lines, stderr tails — so a server echoing its
// environment cannot leak a secret through the bridge.

/** Shorter values are too likely to be ordinary words to mask. */
const MIN_SECRET_LENGTH = 6;

export class Redactor {
  readonly #values: string[];

  constructor(values: readonly string[]) {
    const set = new Set<string>();
    for (const v of values) {
      if (v.length >= MIN_SECRET_LENGTH) set.add(v);
      // "Bearer <token>": the token alone counts too.
      const parts = v.trim().split(/\s+/);
      const last = parts.at(-1) ?? "";
      if (parts.length > 1 && last.length >= MIN_SECRET_LENGTH) set.add(last);
    }
    // Longest first, so a value containing another is masked whole.
    this.#values = [...set].sort((a, b) => b.length - a.length);
  }

  mask(text: string): string {
    let out = text;
    for (const v of this.#values) out = out.split(v).join("(redacted)");
    return out;
  }
}

/** Name patterns of variables that hold secrets (the kernel's, and a few more spellings). */
export const SECRET_NAME_PATTERNS = [
  "*KEY*",
  "*SECRET*",
  "*TOKEN*",
  "*PASSWORD*",
  "*PASSWD*",
  "*CREDENTIAL*",
  "*AUTH*",
  "*PRIVATE*",
];

function patternRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "i");
}

/** Whether a variable of this name holds a secret (by the patterns above and the block's own). */
export function secretName(name: string, extra: readonly string[] = []): boolean {
  return [...SECRET_NAME_PATTERNS, ...extra].some((p) => patternRegExp(p).test(name));
}
