// Masks the secrets the block passed to the server (header values, and env values under a
// secret-looking name: tokens, keys, passwords) in any text the bridge lets out — results,
// errors, progress, log lines, stderr tails — in every encoding SecretMask knows, so a
// server echoing its environment cannot leak a secret through the bridge. Values the block
// read with env() under a plain name look like any literal here; the kernel masks those
// (with every other value the configuration reads) in what this plugin sends it.
import { SecretMask } from "@pluggableharness/config/secret-mask";

export class Redactor {
  readonly #mask: SecretMask;

  constructor(values: readonly string[]) {
    const set = new Set<string>();
    for (const v of values) {
      set.add(v);
      // "Bearer <token>": the token alone counts too.
      const parts = v.trim().split(/\s+/);
      if (parts.length > 1) set.add(parts.at(-1)!);
    }
    this.#mask = new SecretMask(set);
  }

  mask(text: string): string {
    return this.#mask.mask(text);
  }

  /** A JSON value with every string masked (the same value when nothing was). */
  maskJson<T>(value: T): T {
    return this.#mask.maskJson(value);
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
