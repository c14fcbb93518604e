// Bounding what a server's message can cost the bridge (docs/security/mcp.md). A message
// is read as it streams in, never held whole: the clipper re-emits it as compact JSON in
// which no string is longer than `maxString` and, once the output has reached `maxTotal`,
// arrays take no more elements and strings shrink to a few hundred characters. Object
// members are kept (a block keeps its `type` and `mimeType`, so the message still parses
// as MCP) until a hard cap past `maxTotal`, after which only the JSON-RPC and MCP members
// a message needs are kept. So a 50 MiB result costs the bridge a few MiB however it is
// shaped: one huge text, a million small blocks, an image, deep nesting.
//
// What was cut is reported by path (the original length of each cut string, how many
// elements each array lost), so the bridge can say so and still describe an image by its
// real size.

/** What the clipper keeps. */
export interface ClipLimits {
  /** Longest string kept, in UTF-16 code units (escapes count as the character they stand for). */
  readonly maxString: number;
  /** Output size (characters) past which arrays drop elements and strings shrink. */
  readonly maxTotal: number;
}

export type JsonPath = readonly (string | number)[];

export interface ClipReport {
  /** Strings cut short, and the characters they lost. */
  cutStrings: number;
  droppedChars: number;
  /** Array elements and object members left out. */
  droppedItems: number;
  /** Cut strings by path with their original length (the first MAX_RECORDS). */
  readonly cuts: { path: JsonPath; length: number }[];
  /** Arrays and objects that lost items, by path (the first MAX_RECORDS). */
  readonly drops: { path: JsonPath; count: number }[];
  /** The input was not one JSON value. */
  invalid: boolean;
}

/** Strings once the output is full: enough for a type, a MIME type, a URI. */
const SMALL_STRING = 256;
/** Past maxTotal by this much, object members other than ESSENTIAL ones are left out too. */
const HARD_MARGIN = 256 * 1024;
const MAX_KEY = 256;
const MAX_SCALAR = 64;
const MAX_RECORDS = 256;
/** Deeper nesting is not a message any server means to send (and JSON.parse would overflow). */
const MAX_DEPTH = 256;
/** Members a JSON-RPC message or an MCP result needs to parse; kept past the hard cap. */
const ESSENTIAL = new Set([
  "jsonrpc",
  "id",
  "method",
  "params",
  "result",
  "error",
  "code",
  "message",
  "content",
  "contents",
  "isError",
  "type",
  "text",
  "data",
  "blob",
  "mimeType",
  "uri",
  "name",
  "resource",
  "progressToken",
  "progress",
]);
/** Base64 members: cut to whole 4-character groups, so what is left still decodes. */
const BASE64_KEYS = new Set(["data", "blob"]);

/** Where the reader is in the text. */
const St = {
  Value: 0,
  AfterValue: 1,
  Key: 2,
  Colon: 3,
  Str: 4,
  Esc: 5,
  Unicode: 6,
  Scalar: 7,
  Done: 8,
  Invalid: 9,
} as const;
type St = (typeof St)[keyof typeof St];

interface Frame {
  readonly array: boolean;
  readonly keep: boolean;
  /** Items written so far (decides the comma). */
  written: number;
  /** Array: index of the current element. Object: the current member's key. */
  index: number;
  key: string;
  dropped: number;
  /** This container's entry in report.drops, once it has lost something. */
  record?: { path: JsonPath; count: number };
}

const SCALAR_START = /[-0-9tfn]/;
const SCALAR_OK = /^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null)$/;
const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const SPECIAL = /["\\]/g;

export class JsonClipper {
  readonly #limits: ClipLimits;
  readonly #hardCap: number;
  readonly #out: string[] = [];
  #size = 0;
  readonly #stack: Frame[] = [];
  #state: St = St.Value;
  /** The value being started is kept (decided per member / element). */
  #memberKeep = true;
  // The string being read.
  #strKey = false;
  #strKeep = false;
  #strLimit = 0;
  #strUnits = 0;
  #strKept = 0;
  #keyRaw = "";
  #esc = "";
  #scalar = "";
  #scalarKeep = false;
  readonly report: ClipReport = {
    cutStrings: 0,
    droppedChars: 0,
    droppedItems: 0,
    cuts: [],
    drops: [],
    invalid: false,
  };

  constructor(limits: ClipLimits) {
    this.#limits = limits;
    this.#hardCap = limits.maxTotal + HARD_MARGIN;
  }

  /** Feeds the next piece of the message. */
  write(chunk: string): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      switch (this.#state) {
        case St.Invalid:
          return;
        case St.Str: {
          SPECIAL.lastIndex = i;
          const m = SPECIAL.exec(chunk);
          const end = m ? m.index : n;
          if (end > i) this.#strRun(chunk, i, end);
          i = end;
          if (!m) break;
          i++;
          if (m[0] === "\\") {
            this.#esc = "\\";
            this.#state = St.Esc;
          } else this.#endString();
          break;
        }
        case St.Esc: {
          const c = chunk[i++]!;
          this.#esc += c;
          if (c === "u") this.#state = St.Unicode;
          else if ('"\\/bfnrt'.includes(c)) this.#escaped();
          else this.#fail();
          break;
        }
        case St.Unicode: {
          const c = chunk[i++]!;
          if (!/[0-9a-fA-F]/.test(c)) {
            this.#fail();
            break;
          }
          this.#esc += c;
          if (this.#esc.length === 6) this.#escaped();
          break;
        }
        case St.Scalar: {
          const c = chunk[i]!;
          if (/[-+.0-9a-zA-Z]/.test(c)) {
            if (this.#scalar.length <= MAX_SCALAR) this.#scalar += c;
            i++;
          } else this.#endScalar(); // the delimiter is read in the next state
          break;
        }
        default: {
          const code = chunk.charCodeAt(i);
          if (WS.has(code)) {
            i++;
            break;
          }
          this.#structural(chunk[i]!);
          i++;
        }
      }
    }
  }

  /** The clipped message (compact JSON), or undefined when the input was not one JSON value. */
  end(): string | undefined {
    if (this.#state === St.Scalar) this.#endScalar();
    if (this.#state !== St.Done) this.report.invalid = true;
    if (this.report.invalid) return undefined;
    return this.#out.join("");
  }

  get clipped(): boolean {
    return this.report.cutStrings > 0 || this.report.droppedItems > 0;
  }

  #emit(s: string): void {
    this.#out.push(s);
    this.#size += s.length;
  }

  #fail(): void {
    this.#state = St.Invalid;
    this.report.invalid = true;
    this.#out.length = 0;
  }

  #path(): (string | number)[] {
    return this.#stack.map((f) => (f.array ? f.index : f.key));
  }

  #top(): Frame | undefined {
    return this.#stack[this.#stack.length - 1];
  }

  /** Decides whether the value starting now is kept, writing its comma when it is. */
  #startValue(): boolean {
    const top = this.#top();
    if (!top) return true;
    if (!top.array) return this.#memberKeep;
    if (!top.keep) return false;
    if (this.#size >= this.#limits.maxTotal) {
      this.#drop(top);
      return false;
    }
    if (top.written++ > 0) this.#emit(",");
    return true;
  }

  /** Counts an item `frame` (the innermost container) leaves out. */
  #drop(frame: Frame): void {
    this.report.droppedItems++;
    frame.dropped++;
    if (!frame.record && this.report.drops.length < MAX_RECORDS) {
      // The container's own path: where it sits in the frames around it.
      frame.record = { path: this.#path().slice(0, -1), count: 0 };
      this.report.drops.push(frame.record);
    }
    if (frame.record) frame.record.count = frame.dropped;
  }

  #structural(c: string): void {
    switch (this.#state) {
      case St.Value: {
        const top = this.#top();
        if (c === "]" && top?.array && top.written === 0 && top.index === 0 && top.dropped === 0) {
          this.#close(c);
          return;
        }
        const keep = this.#startValue();
        if (c === "{" || c === "[") {
          if (this.#stack.length >= MAX_DEPTH) {
            this.#fail();
            return;
          }
          if (keep) this.#emit(c);
          this.#stack.push({ array: c === "[", keep, written: 0, index: 0, key: "", dropped: 0 });
          this.#state = c === "[" ? St.Value : St.Key;
        } else if (c === '"') {
          this.#beginString(false, keep);
        } else if (SCALAR_START.test(c)) {
          this.#scalar = c;
          this.#scalarKeep = keep;
          this.#state = St.Scalar;
        } else this.#fail();
        return;
      }
      case St.Key:
        if (c === '"') this.#beginString(true, false);
        else if (c === "}") this.#close(c);
        else this.#fail();
        return;
      case St.Colon:
        if (c === ":") this.#state = St.Value;
        else this.#fail();
        return;
      case St.AfterValue: {
        const top = this.#top()!;
        if (c === ",") {
          if (top.array) {
            top.index++;
            this.#state = St.Value;
          } else this.#state = St.Key;
        } else if (c === "]" || c === "}") this.#close(c);
        else this.#fail();
        return;
      }
      case St.Done:
        this.#fail();
        return;
      default:
        this.#fail();
    }
  }

  #close(c: string): void {
    const top = this.#stack.pop();
    if (!top || top.array !== (c === "]")) {
      this.#fail();
      return;
    }
    if (top.keep) this.#emit(c);
    this.#state = this.#stack.length === 0 ? St.Done : St.AfterValue;
  }

  #beginString(isKey: boolean, keep: boolean): void {
    this.#strKey = isKey;
    this.#strKeep = isKey || keep;
    this.#strUnits = 0;
    this.#strKept = 0;
    if (isKey) {
      this.#keyRaw = "";
      this.#strLimit = MAX_KEY;
    } else {
      let limit =
        this.#size >= this.#limits.maxTotal
          ? SMALL_STRING
          : Math.max(SMALL_STRING, Math.min(this.#limits.maxString, this.#limits.maxTotal - this.#size));
      const top = this.#top();
      if (top && !top.array && BASE64_KEYS.has(top.key)) limit -= limit % 4;
      this.#strLimit = limit;
      if (keep) this.#emit('"');
    }
    this.#state = St.Str;
  }

  #keepRaw(s: string): void {
    if (this.#strKey) this.#keyRaw += s;
    else this.#emit(s);
  }

  #strRun(chunk: string, from: number, to: number): void {
    const len = to - from;
    this.#strUnits += len;
    if (!this.#strKeep) return;
    const room = this.#strLimit - this.#strKept;
    if (room <= 0) return;
    const take = Math.min(room, len);
    this.#keepRaw(chunk.slice(from, from + take));
    this.#strKept += take;
  }

  #escaped(): void {
    this.#strUnits++;
    if (this.#strKeep && this.#strKept < this.#strLimit) {
      this.#keepRaw(this.#esc);
      this.#strKept++;
    }
    this.#state = St.Str;
  }

  #endString(): void {
    const cut = this.#strUnits - this.#strKept;
    if (this.#strKey) {
      let key: string;
      try {
        key = JSON.parse(`"${this.#keyRaw}"`) as string;
      } catch {
        this.#fail();
        return;
      }
      const top = this.#top()!;
      top.key = key;
      // The bridge's own report is never taken from the server.
      const spoof = key === CLIP_KEY && this.#stack.length === 2;
      const keep =
        top.keep && !spoof && (this.#size < this.#hardCap || (ESSENTIAL.has(key) && top.written < 32));
      if (keep) {
        if (top.written++ > 0) this.#emit(",");
        this.#emit(`"${this.#keyRaw}":`);
      } else if (top.keep && !spoof) this.#drop(top);
      this.#memberKeep = keep;
      if (cut > 0 && keep) this.#cut(cut, this.#strUnits);
      this.#state = St.Colon;
      return;
    }
    if (this.#strKeep) {
      this.#emit('"');
      if (cut > 0) this.#cut(cut, this.#strUnits);
    }
    this.#state = this.#stack.length === 0 ? St.Done : St.AfterValue;
  }

  #cut(dropped: number, length: number): void {
    this.report.cutStrings++;
    this.report.droppedChars += dropped;
    if (this.report.cuts.length < MAX_RECORDS) this.report.cuts.push({ path: this.#path(), length });
  }

  #endScalar(): void {
    const token = this.#scalar;
    this.#state = this.#stack.length === 0 ? St.Done : St.AfterValue;
    if (token.length > MAX_SCALAR) {
      // A number of thousands of digits: kept as 0, reported as a cut.
      if (this.#scalarKeep) {
        this.#emit("0");
        this.#cut(token.length, token.length);
      }
      return;
    }
    if (!SCALAR_OK.test(token)) {
      this.#fail();
      return;
    }
    if (this.#scalarKeep) this.#emit(token);
  }
}

/** Where the bridge puts a clipper's report in a result it clipped. */
export const CLIP_KEY = "pluggableharness/clipped";

/** Clips one whole JSON text (for tests and small bodies). */
export function clipJson(text: string, limits: ClipLimits): { json?: string; report: ClipReport } {
  const c = new JsonClipper(limits);
  c.write(text);
  const json = c.end();
  return { ...(json !== undefined ? { json } : {}), report: c.report };
}

/**
 * Parses a clipped message and, when it is a response whose result was clipped, adds the
 * report (paths relative to the result) under CLIP_KEY; a server's own CLIP_KEY is never
 * kept. Returns undefined when the text is not JSON.
 */
export function parseClipped(json: string, report: ClipReport, prefix: JsonPath = []): unknown {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  const annotate = (msg: unknown, at: JsonPath) => {
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return;
    const result = (msg as Record<string, unknown>)["result"];
    if (result === null || typeof result !== "object" || Array.isArray(result)) return;
    const r = result as Record<string, unknown>;
    delete r[CLIP_KEY];
    const under = (p: JsonPath) =>
      p.length > at.length + 1 && at.every((x, i) => p[i] === x) && p[at.length] === "result";
    const cuts = report.cuts
      .filter((c) => under(c.path))
      .map((c) => ({ ...c, path: c.path.slice(at.length + 1) }));
    const drops = report.drops
      .filter((d) => under(d.path) || (d.path.length === at.length + 1 && d.path[at.length] === "result"))
      .map((d) => ({ ...d, path: d.path.slice(at.length + 1) }));
    if (cuts.length === 0 && drops.length === 0) return;
    r[CLIP_KEY] = { cuts, drops, dropped_chars: report.droppedChars };
  };
  if (Array.isArray(value)) {
    for (const [i, m] of value.entries()) annotate(m, [...prefix, i]);
  } else annotate(value, prefix);
  return value;
}

/** A report as the bridge reads it back from a result. */
export interface ResultClipReport {
  cuts: { path: JsonPath; length: number }[];
  drops: { path: JsonPath; count: number }[];
  dropped_chars: number;
}

export function clipReportOf(result: Record<string, unknown>): ResultClipReport | undefined {
  const r = result[CLIP_KEY];
  if (r === null || typeof r !== "object") return undefined;
  return r as ResultClipReport;
}
