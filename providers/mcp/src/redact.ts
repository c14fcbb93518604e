// Masks the values the block passed to the server (env and headers: tokens, keys) in any
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
