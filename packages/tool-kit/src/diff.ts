// Line diffs (Myers' O(ND) algorithm after trimming the common prefix and suffix),
// grouped into unified-diff hunks, printed as unified text, parsed back and applied.
// A line keeps its terminator while comparing, so "x" and "x\n" differ, as in git.

export interface DiffLine {
  op: "context" | "add" | "remove";
  /** The line without its "\n". */
  text: string;
  /** The line is the last of its file and has no "\n". */
  noEol?: boolean;
}

export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

type Op = { op: "context" | "add" | "remove"; line: string };

/** Above this many differing lines, the middle is reported as removed-then-added. */
const MAX_EDIT_DISTANCE = 4_000;

export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n").map((l) => `${l}\n`);
  // The final piece has no terminator: either empty (text ended in "\n") or a last line.
  const last = lines.pop()!.slice(0, -1);
  if (last !== "") lines.push(last);
  return lines;
}

function myers(a: readonly string[], b: readonly string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  const limit = Math.min(max, MAX_EDIT_DISTANCE);
  for (let d = 0; d <= limit; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)
          ? v[offset + k + 1]!
          : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace);
    }
  }
  return undefined;
}

function backtrack(a: readonly string[], b: readonly string[], trace: Int32Array[]): Op[] {
  const out: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const snap = trace[d]!;
    const at = (k: number) => snap[k + d + 1]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      out.push({ op: "context", line: a[x - 1]! });
      x--;
      y--;
    }
    if (d > 0) {
      if (x === prevX) out.push({ op: "add", line: b[--y]! });
      else out.push({ op: "remove", line: a[--x]! });
    }
  }
  return out.reverse();
}

/** The edit script turning `oldText` into `newText`, line by line. */
function diffOps(oldText: string, newText: string): Op[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const middle = myers(midA, midB) ?? [
    ...midA.map((line): Op => ({ op: "remove", line })),
    ...midB.map((line): Op => ({ op: "add", line })),
  ];
  return [
    ...a.slice(0, start).map((line): Op => ({ op: "context", line })),
    ...middle,
    ...a.slice(endA).map((line): Op => ({ op: "context", line })),
  ];
}

function toDiffLine(op: Op): DiffLine {
  const noEol = !op.line.endsWith("\n");
  return { op: op.op, text: noEol ? op.line : op.line.slice(0, -1), ...(noEol ? { noEol } : {}) };
}

/** Unified-diff hunks with `context` lines around each change; [] when equal. */
export function diffLines(oldText: string, newText: string, context = 3): Hunk[] {
  if (oldText === newText) return [];
  const ops = diffOps(oldText, newText);
  const changes: number[] = [];
  ops.forEach((o, i) => {
    if (o.op !== "context") changes.push(i);
  });
  const hunks: Hunk[] = [];
  let i = 0;
  while (i < changes.length) {
    const from = Math.max(0, changes[i]! - context);
    let last = changes[i]!;
    while (i + 1 < changes.length && changes[i + 1]! - last <= 2 * context) last = changes[++i]!;
    i++;
    const to = Math.min(ops.length, last + context + 1);
    let oldLine = 1;
    let newLine = 1;
    for (let j = 0; j < from; j++) {
      if (ops[j]!.op !== "add") oldLine++;
      if (ops[j]!.op !== "remove") newLine++;
    }
    const slice = ops.slice(from, to);
    const oldLines = slice.filter((o) => o.op !== "add").length;
    const newLines = slice.filter((o) => o.op !== "remove").length;
    hunks.push({
      oldStart: oldLines === 0 ? oldLine - 1 : oldLine,
      oldLines,
      newStart: newLines === 0 ? newLine - 1 : newLine,
      newLines,
      lines: slice.map(toDiffLine),
    });
  }
  return hunks;
}

const PREFIX = { context: " ", add: "+", remove: "-" } as const;

/** The hunks as unified-diff text with `--- a/<path>` / `+++ b/<path>` headers. */
export function formatUnified(path: string, hunks: readonly Hunk[]): string {
  if (hunks.length === 0) return "";
  const out = [`--- a/${path}`, `+++ b/${path}`];
  for (const h of hunks) {
    out.push(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
    for (const l of h.lines) {
      out.push(`${PREFIX[l.op]}${l.text}`);
      if (l.noEol) out.push("\\ No newline at end of file");
    }
  }
  return `${out.join("\n")}\n`;
}

const HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Hunks from unified-diff text (file headers and anything before the first hunk ignored). */
export function parseUnified(text: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  for (const raw of text.split("\n")) {
    const header = HEADER.exec(raw);
    if (header) {
      current = {
        oldStart: Number(header[1]),
        oldLines: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newLines: header[4] === undefined ? 1 : Number(header[4]),
        lines: [],
      };
      hunks.push(current);
      continue;
    }
    if (!current) continue;
    if (raw.startsWith("\\")) {
      const prev = current.lines.at(-1);
      if (prev) prev.noEol = true;
      continue;
    }
    const op = raw[0] === "+" ? "add" : raw[0] === "-" ? "remove" : raw[0] === " " ? "context" : undefined;
    if (op) current.lines.push({ op, text: raw.slice(1) });
  }
  return hunks;
}

/** Applies hunks to `oldText`; throws when a context or removed line does not match. */
export function applyHunks(oldText: string, hunks: readonly Hunk[]): string {
  const a = splitLines(oldText);
  const out: string[] = [];
  let pos = 0;
  const full = (l: DiffLine) => (l.noEol ? l.text : `${l.text}\n`);
  for (const h of hunks) {
    const start = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    while (pos < start) out.push(a[pos++]!);
    for (const l of h.lines) {
      if (l.op === "add") {
        out.push(full(l));
        continue;
      }
      if (a[pos] !== full(l)) throw new Error(`hunk does not apply at old line ${pos + 1}`);
      if (l.op === "context") out.push(a[pos]!);
      pos++;
    }
  }
  while (pos < a.length) out.push(a[pos++]!);
  return out.join("");
}
