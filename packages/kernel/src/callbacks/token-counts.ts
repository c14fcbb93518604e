// Exact token counts already paid for. A model provider's CountTokens usually costs a
// vendor round trip, and context providers ask for the same static text every turn
// (base instructions, AGENTS.md), so an exact count is remembered by the provider's
// identity, the model and a SHA-256 of the text. The text itself is never stored.
// Counts persist across runs in $XDG_CACHE_HOME/agent/token-counts.json (written at
// kernel shutdown), so a new session does not pay for the same count again either.
// Only exact counts are kept; the fallback estimate is cheap to recompute.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

const FORMAT = 1;
/** Entries kept on disk; the oldest are dropped first. */
const MAX_ENTRIES = 4_096;
/** A vendor may retune a tokenizer behind a model id: counts are trusted this long. */
const MAX_AGE_MS = 14 * 24 * 60 * 60 * 1000;

interface FileShape {
  readonly format: number;
  /** key -> [count, stored at (ms)] */
  readonly counts: Record<string, [number, number]>;
}

export function defaultTokenCountFile(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env["XDG_CACHE_HOME"];
  const base = xdg?.startsWith("/") ? xdg : join(env["HOME"] || homedir(), ".cache");
  return join(base, "agent", "token-counts.json");
}

export class TokenCountCache {
  readonly #file: string | undefined;
  readonly #now: () => number;
  #counts: Map<string, [number, number]> | undefined;
  #dirty = false;

  /** Without a file the cache lives for this process only. */
  constructor(file?: string, now: () => number = Date.now) {
    this.#file = file;
    this.#now = now;
  }

  static key(provider: string, modelId: string, text: string): string {
    return createHash("sha256")
      .update(JSON.stringify([provider, modelId]))
      .update("\u0000")
      .update(text)
      .digest("hex");
  }

  #map(): Map<string, [number, number]> {
    if (this.#counts) return this.#counts;
    this.#counts = new Map();
    if (!this.#file) return this.#counts;
    try {
      const data = JSON.parse(readFileSync(this.#file, "utf8")) as FileShape;
      if (data.format !== FORMAT) return this.#counts;
      const oldest = this.#now() - MAX_AGE_MS;
      for (const [k, v] of Object.entries(data.counts)) {
        if (Array.isArray(v) && Number.isSafeInteger(v[0]) && v[0] >= 0 && v[1] >= oldest) {
          this.#counts.set(k, [v[0], v[1]]);
        }
      }
    } catch {
      // no file yet, or one this build cannot read: start empty
    }
    return this.#counts;
  }

  get(key: string): number | undefined {
    return this.#map().get(key)?.[0];
  }

  set(key: string, count: number): void {
    const map = this.#map();
    if (map.get(key)?.[0] === count) return;
    map.delete(key);
    map.set(key, [count, this.#now()]);
    this.#dirty = true;
  }

  get size(): number {
    return this.#map().size;
  }

  /** Writes new counts to disk (atomically); a failure only loses the cache. */
  flush(): void {
    if (!this.#dirty || !this.#file || !this.#counts) return;
    this.#dirty = false;
    const entries = [...this.#counts.entries()].slice(-MAX_ENTRIES);
    const data: FileShape = { format: FORMAT, counts: Object.fromEntries(entries) };
    try {
      mkdirSync(dirname(this.#file), { recursive: true, mode: 0o700 });
      const tmp = `${this.#file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
      renameSync(tmp, this.#file);
    } catch {
      // best effort
    }
  }
}
