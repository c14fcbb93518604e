// Masking secret values in text that leaves a trusted place (tool results, errors, logs,
// summaries): every value, and the encodings of it a careless or hostile program is likely
// to print — base64 (standard and url-safe) at each of the three byte alignments a value
// can have inside a longer encoded string, hex in both cases, percent- and form-encoding,
// JSON string escapes, and the value reversed (docs/security/mcp.md).
//
// Every form of every value is computed once, when the mask is built, and all of them are
// found in one pass by an Aho–Corasick automaton over UTF-16 code units, so masking a large
// output costs one scan whatever the number of secrets. Overlapping matches are masked as
// their union.
//
// Short values: a value shorter than MIN_LITERAL_LENGTH is not masked at all (it would
// match ordinary words); one shorter than MIN_ENCODED_LENGTH is masked literally only. At
// 8 characters the shortest base64 form is 8 characters (two whole groups, 48 bits) and
// the shortest hex form 16, so a chance match in unrelated data (a hash, an image) is
// vanishingly rare; shorter values would give 4-character base64 forms that random base64
// contains every few megabytes.

/** Values shorter than this are not masked. */
export const MIN_LITERAL_LENGTH = 6;
/** Values at least this long are masked in their encoded forms too. */
export const MIN_ENCODED_LENGTH = 8;
export const DEFAULT_MARKER = "[redacted]";

export interface SecretMaskOptions {
  /** What replaces a match (default "[redacted]"). */
  readonly marker?: string;
  /** Shortest value masked literally (default MIN_LITERAL_LENGTH). */
  readonly minLiteral?: number;
  /** Shortest value masked in encoded forms too (default MIN_ENCODED_LENGTH). */
  readonly minEncoded?: number;
}

/** One form of a secret as it may appear in text. */
export interface SecretForm {
  readonly text: string;
  /** A base64 form: the match is widened over the partial groups around it. */
  readonly base64: boolean;
}

const BASE64_CHAR = /[A-Za-z0-9+/_-]/;
/** Characters of the groups a base64 form leaves out at either end (at most 3 each side). */
const BASE64_EDGE = 3;

function reverse(s: string): string {
  return [...s].reverse().join("");
}

function lowerEscapes(s: string): string {
  return s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
}

/**
 * The forms of `value` the mask looks for. Base64 forms are the characters that depend on
 * the value alone: for a value starting 0, 1 or 2 bytes into a 3-byte group, the whole
 * groups that follow its first partial one.
 */
export function secretForms(value: string, options: SecretMaskOptions = {}): SecretForm[] {
  const minLiteral = options.minLiteral ?? MIN_LITERAL_LENGTH;
  const minEncoded = Math.max(options.minEncoded ?? MIN_ENCODED_LENGTH, minLiteral);
  if (value.length < minLiteral) return [];
  const plain = new Set<string>([value]);
  const b64 = new Set<string>();
  if (value.length >= minEncoded) {
    const bytes = Buffer.from(value, "utf8");
    plain.add(reverse(value));
    const hex = bytes.toString("hex");
    plain.add(hex);
    plain.add(hex.toUpperCase());
    const uri = encodeURIComponent(value);
    // application/x-www-form-urlencoded: space as "+", and !'()~ escaped too.
    const form = new URLSearchParams([["", value]]).toString().slice(1);
    for (const p of [uri, uri.replace(/%20/g, "+"), form, form.replace(/\+/g, "%20")]) {
      plain.add(p);
      plain.add(lowerEscapes(p));
    }
    // Inside JSON text: quotes and backslashes escaped, and (ensure_ascii) non-ASCII as \uXXXX.
    const json = JSON.stringify(value).slice(1, -1);
    plain.add(json);
    const ascii = json.replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    plain.add(ascii);
    plain.add(ascii.replace(/\\u[0-9a-f]{4}/g, (m) => `\\u${m.slice(2).toUpperCase()}`));
    for (let skip = 0; skip < 3; skip++) {
      const rest = bytes.subarray(skip);
      const whole = rest.subarray(0, rest.length - (rest.length % 3));
      if (whole.length < 6) continue;
      b64.add(whole.toString("base64"));
      b64.add(whole.toString("base64url"));
    }
  }
  const out: SecretForm[] = [];
  for (const t of b64) out.push({ text: t, base64: true });
  for (const t of plain) if (!b64.has(t)) out.push({ text: t, base64: false });
  return out;
}

/** The automaton: goto edges per state (sparse), failure links, and what ends at a state. */
class Automaton {
  /** Root transitions for every UTF-16 code unit (dense: most text never leaves the root). */
  readonly root = new Int32Array(65536);
  /** Edges of the other states. */
  readonly edges: Map<number, number>[] = [new Map()];
  readonly fail: number[] = [0];
  /** Length of the longest form ending at this state (0: none). */
  readonly length: number[] = [0];
  /** Whether that longest form is a base64 form. */
  readonly base64: boolean[] = [false];

  constructor(forms: readonly SecretForm[]) {
    for (const f of forms) {
      let s = 0;
      for (let i = 0; i < f.text.length; i++) {
        const c = f.text.charCodeAt(i);
        let next = this.edges[s]!.get(c);
        if (next === undefined) {
          next = this.edges.length;
          this.edges.push(new Map());
          this.fail.push(0);
          this.length.push(0);
          this.base64.push(false);
          this.edges[s]!.set(c, next);
        }
        s = next;
      }
      if (f.text.length > this.length[s]!) {
        this.length[s] = f.text.length;
        this.base64[s] = f.base64;
      } else if (f.text.length === this.length[s] && f.base64) this.base64[s] = true;
    }
    // Breadth first: a state's failure link is settled before its children's.
    const queue: number[] = [];
    for (const [c, s] of this.edges[0]!) {
      this.root[c] = s;
      queue.push(s);
    }
    for (let q = 0; q < queue.length; q++) {
      const s = queue[q]!;
      for (const [c, t] of this.edges[s]!) {
        let f = this.fail[s]!;
        while (f !== 0 && !this.edges[f]!.has(c)) f = this.fail[f]!;
        const target = f === 0 ? this.root[c]! : this.edges[f]!.get(c)!;
        this.fail[t] = target === t ? 0 : target;
        // A shorter form ending here through the failure link counts when none of its own does.
        if (this.length[t] === 0) {
          this.length[t] = this.length[this.fail[t]!]!;
          this.base64[t] = this.base64[this.fail[t]!]!;
        }
        queue.push(t);
      }
    }
  }

  /**
   * Calls `hit(start, end, base64)` for the longest form ending at each position where one
   * does, in order of `end`; stops when it returns true.
   */
  scan(text: string, hit: (start: number, end: number, base64: boolean) => boolean | undefined): void {
    const { root, edges, fail, length } = this;
    let s = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (s === 0) {
        s = root[c]!;
        if (s === 0) continue;
      } else {
        let next = edges[s]!.get(c);
        while (next === undefined && s !== 0) {
          s = fail[s]!;
          next = s === 0 ? root[c]! : edges[s]!.get(c);
        }
        s = next ?? 0;
      }
      const n = length[s]!;
      if (n > 0 && hit(i + 1 - n, i + 1, this.base64[s]!)) return;
    }
  }
}

/** A set of secret values and every form of them, ready to find and mask in text. */
export class SecretMask {
  readonly #automaton: Automaton | undefined;
  readonly #marker: string;
  /** How many forms are searched for (for diagnostics and tests). */
  readonly forms: number;
  /** Length of the longest form (0 when there is none). */
  readonly longest: number;

  constructor(values: Iterable<string>, options: SecretMaskOptions = {}) {
    this.#marker = options.marker ?? DEFAULT_MARKER;
    const seen = new Set<string>();
    const forms: SecretForm[] = [];
    for (const v of values) {
      for (const f of secretForms(v, options)) {
        const key = `${f.base64 ? "b" : "p"}${f.text}`;
        if (seen.has(key)) continue;
        seen.add(key);
        forms.push(f);
      }
    }
    this.forms = forms.length;
    this.longest = forms.reduce((n, f) => Math.max(n, f.text.length), 0);
    this.#automaton = forms.length > 0 ? new Automaton(forms) : undefined;
  }

  /** Whether there is nothing to mask. */
  get empty(): boolean {
    return this.#automaton === undefined;
  }

  /** Whether `text` holds any form of any value. */
  contains(text: string): boolean {
    let found = false;
    this.#automaton?.scan(text, () => {
      found = true;
      return true;
    });
    return found;
  }

  /** `text` with every form of every value replaced by the marker (the same string when none is there). */
  mask(text: string): string {
    if (!this.#automaton || text.length === 0) return text;
    const ranges = this.#ranges(text);
    return ranges.length === 0 ? text : this.#apply(text, ranges, text.length);
  }

  /**
   * For text that arrives in pieces (a tool's output stream): the part that no later piece
   * can change, masked, and the rest as it was, to be put in front of the next piece. A
   * form not yet complete can only start in the last `longest` characters, and a base64
   * match widens over at most BASE64_EDGE more; a match reaching into that tail is held
   * back whole.
   */
  maskPrefix(text: string): { masked: string; rest: string } {
    if (!this.#automaton) return { masked: text, rest: "" };
    let cut = text.length - (this.longest + BASE64_EDGE);
    if (cut <= 0) return { masked: "", rest: text };
    const ranges = this.#ranges(text);
    let kept = ranges.length;
    for (let i = 0; i < ranges.length; i += 2) {
      if (ranges[i + 1]! > cut) {
        cut = Math.min(cut, ranges[i]!);
        kept = i;
        break;
      }
    }
    const head = text.slice(0, cut);
    return {
      masked: kept === 0 ? head : this.#apply(head, ranges.slice(0, kept), cut),
      rest: text.slice(cut),
    };
  }

  /** The merged [start, end) ranges to mask, in order. */
  #ranges(text: string): number[] {
    const ranges: number[] = [];
    this.#automaton?.scan(text, (start, end, base64) => {
      if (base64) {
        // The partial groups on either side still carry bits of the value: widen over them.
        for (let k = 0; k < BASE64_EDGE && start > 0 && BASE64_CHAR.test(text[start - 1]!); k++) start--;
        for (let k = 0; k < BASE64_EDGE && end < text.length && BASE64_CHAR.test(text[end]!); k++) end++;
        while (end < text.length && text[end] === "=") end++;
      }
      // Ranges arrive ordered by end; a new one may reach back over earlier ones.
      while (ranges.length > 0 && start <= ranges[ranges.length - 1]!) {
        end = Math.max(end, ranges.pop()!);
        start = Math.min(start, ranges.pop()!);
      }
      ranges.push(start, end);
      return false;
    });
    return ranges;
  }

  /** `text` up to `end` with the ranges (all within it) replaced by the marker. */
  #apply(text: string, ranges: readonly number[], end: number): string {
    const parts: string[] = [];
    let at = 0;
    for (let i = 0; i < ranges.length; i += 2) {
      parts.push(text.slice(at, ranges[i]), this.#marker);
      at = ranges[i + 1]!;
    }
    parts.push(text.slice(at, end));
    return parts.join("");
  }

  /**
   * A JSON value with every string (object keys included) masked. Unchanged parts are
   * shared with the input, and the input itself comes back when nothing was masked.
   */
  maskJson<T>(value: T): T {
    if (!this.#automaton) return value;
    return this.#json(value) as T;
  }

  #json(value: unknown): unknown {
    if (typeof value === "string") return this.mask(value);
    if (Array.isArray(value)) {
      let changed = false;
      const out = value.map((v) => {
        const m = this.#json(v);
        if (m !== v) changed = true;
        return m;
      });
      return changed ? out : value;
    }
    if (value !== null && typeof value === "object") {
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const mk = this.mask(k);
        const mv = this.#json(v);
        if (mk !== k || mv !== v) changed = true;
        out[mk] = mv;
      }
      return changed ? out : value;
    }
    return value;
  }
}
