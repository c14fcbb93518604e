// The patch format OpenAI's coding models are trained to write (Codex's apply_patch):
//
//   *** Begin Patch
//   *** Add File: <path>            every following line is "+<text>": the new file
//   *** Delete File: <path>
//   *** Update File: <path>
//   *** Move to: <path>             optional, right after Update: rename as well
//   @@ [<text of a line to find first>]
//   <" " context | "-" removed | "+" added> lines
//   *** End of File                 optional: the chunk ends at the end of the file
//   *** End Patch
//
// Parsing is pure; `applyChunks` computes an updated file's new text in memory. Context
// lines are found the way Codex finds them: exactly, then ignoring trailing whitespace,
// then ignoring surrounding whitespace, then with typographic punctuation folded to ASCII.
import { ToolFailure } from "@pluggableharness/tool-kit";

export type PatchOp =
  | { kind: "add"; path: string; content: string }
  | { kind: "delete"; path: string }
  | { kind: "update"; path: string; moveTo?: string; chunks: Chunk[] };

export interface Chunk {
  /** The "@@ <text>" anchor: a line to find before the chunk's old lines. */
  context?: string;
  oldLines: string[];
  newLines: string[];
  /** "*** End of File": the old lines end the file. */
  endOfFile: boolean;
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const EOF_MARK = "*** End of File";

function bad(line: number, message: string): ToolFailure {
  return new ToolFailure("invalid_arguments", `patch line ${line}: ${message}`, { details: { line } });
}

/**
 * Strips what models sometimes wrap a patch in: a shell heredoc (`apply_patch <<'EOF'` …
 * `EOF`) or a Markdown code fence.
 */
function unwrap(lines: string[]): string[] {
  let ls = lines;
  const first = ls[0]?.trim() ?? "";
  const heredoc = /^(?:apply_patch\s+)?<<\s*(['"]?)(\w+)\1\s*$/.exec(first);
  if (heredoc && ls.at(-1)?.trim() === heredoc[2]) ls = ls.slice(1, -1);
  else if (/^```[\w-]*$/.test(first) && ls.at(-1)?.trim() === "```") ls = ls.slice(1, -1);
  return ls;
}

export function parsePatch(text: string): PatchOp[] {
  let lines = text.replace(/\r\n/g, "\n").split("\n");
  while (lines.length > 0 && lines.at(-1)!.trim() === "") lines.pop();
  while (lines.length > 0 && lines[0]!.trim() === "") lines.shift();
  lines = unwrap(lines);
  if (lines[0]?.trim() !== BEGIN) throw bad(1, `the patch must start with "${BEGIN}"`);
  if (lines.at(-1)?.trim() !== END) throw bad(lines.length, `the patch must end with "${END}"`);
  const ops: PatchOp[] = [];
  let i = 1;
  const last = lines.length - 1;
  const pathOf = (line: string, prefix: string, n: number) => {
    const p = line.slice(prefix.length).trim();
    if (p === "") throw bad(n, "the file path is empty");
    return p;
  };
  while (i < last) {
    const line = lines[i]!;
    const n = i + 1;
    if (line.startsWith(ADD)) {
      const path = pathOf(line, ADD, n);
      const body: string[] = [];
      i++;
      while (i < last && lines[i]!.startsWith("+")) body.push(lines[i++]!.slice(1));
      ops.push({ kind: "add", path, content: body.length > 0 ? `${body.join("\n")}\n` : "" });
      continue;
    }
    if (line.startsWith(DELETE)) {
      ops.push({ kind: "delete", path: pathOf(line, DELETE, n) });
      i++;
      continue;
    }
    if (line.startsWith(UPDATE)) {
      const path = pathOf(line, UPDATE, n);
      i++;
      let moveTo: string | undefined;
      if (i < last && lines[i]!.startsWith(MOVE)) moveTo = pathOf(lines[i]!, MOVE, i + 1);
      if (moveTo !== undefined) i++;
      const chunks: Chunk[] = [];
      while (i < last && !lines[i]!.startsWith("*** ")) {
        const start = i + 1;
        let context: string | undefined;
        const head = lines[i]!;
        if (head === "@@" || head.startsWith("@@ ")) {
          const c = head.slice(2).trim();
          if (c !== "") context = c;
          i++;
        } else if (chunks.length > 0) {
          throw bad(
            start,
            `expected "@@" to start the next change of ${path}, found ${JSON.stringify(head)}`,
          );
        }
        const chunk: Chunk = {
          oldLines: [],
          newLines: [],
          endOfFile: false,
          ...(context ? { context } : {}),
        };
        while (i < last) {
          const l = lines[i]!;
          if (l === EOF_MARK) {
            chunk.endOfFile = true;
            i++;
            break;
          }
          if (l === "@@" || l.startsWith("@@ ") || l.startsWith("*** ")) break;
          const tag = l[0];
          const body = l.slice(1);
          if (l === "") {
            // An empty line inside a chunk is an empty context line.
            chunk.oldLines.push("");
            chunk.newLines.push("");
          } else if (tag === " ") {
            chunk.oldLines.push(body);
            chunk.newLines.push(body);
          } else if (tag === "-") chunk.oldLines.push(body);
          else if (tag === "+") chunk.newLines.push(body);
          else
            throw bad(
              i + 1,
              `a change line must start with " ", "-" or "+", found ${JSON.stringify(l.slice(0, 40))}`,
            );
          i++;
        }
        if (chunk.oldLines.length === 0 && chunk.newLines.length === 0 && !context)
          throw bad(start, `an empty change in ${path}`);
        chunks.push(chunk);
      }
      if (chunks.length === 0 && moveTo === undefined) throw bad(n, `no changes given for ${path}`);
      ops.push({ kind: "update", path, ...(moveTo !== undefined ? { moveTo } : {}), chunks });
      continue;
    }
    throw bad(
      n,
      `expected "${ADD.trim()}", "${DELETE.trim()}" or "${UPDATE.trim()}", found ${JSON.stringify(line.slice(0, 60))}`,
    );
  }
  if (ops.length === 0) throw bad(1, "the patch changes no file");
  return ops;
}

const PUNCTUATION: Record<string, string> = {
  "\u2010": "-",
  "\u2011": "-",
  "\u2012": "-",
  "\u2013": "-",
  "\u2014": "-",
  "\u2015": "-",
  "\u2212": "-",
  "\u2018": "'",
  "\u2019": "'",
  "\u201A": "'",
  "\u201B": "'",
  "\u201C": '"',
  "\u201D": '"',
  "\u201E": '"',
  "\u201F": '"',
  "\u00A0": " ",
  "\u2002": " ",
  "\u2003": " ",
  "\u2009": " ",
  "\u202F": " ",
};
const fold = (s: string) =>
  s
    .trim()
    .replace(/[\u2010-\u2015\u2212\u2018-\u201F\u00A0\u2002\u2003\u2009\u202F]/g, (c) => PUNCTUATION[c] ?? c);

const PASSES: ((s: string) => string)[] = [(s) => s, (s) => s.trimEnd(), (s) => s.trim(), fold];

/** Index where `pattern` occurs in `lines` at or after `from`, or -1 (at the end only, if `atEnd`). */
function seek(lines: readonly string[], pattern: readonly string[], from: number, atEnd: boolean): number {
  if (pattern.length === 0) return atEnd ? lines.length : from;
  if (pattern.length > lines.length) return -1;
  for (const norm of PASSES) {
    const want = pattern.map(norm);
    const starts = atEnd ? [lines.length - pattern.length] : [];
    if (!atEnd) for (let s = from; s <= lines.length - pattern.length; s++) starts.push(s);
    for (const s of starts) {
      if (s < from) continue;
      let ok = true;
      for (let k = 0; k < want.length && ok; k++) ok = norm(lines[s + k]!) === want[k];
      if (ok) return s;
    }
  }
  return -1;
}

/** The updated text of a file: every chunk located in order, then replaced. */
export function applyChunks(path: string, before: string, chunks: readonly Chunk[]): string {
  const lines = before.split("\n");
  // A final newline leaves an empty last piece: not a line.
  if (lines.at(-1) === "") lines.pop();
  const replacements: { at: number; remove: number; insert: string[] }[] = [];
  let cursor = 0;
  chunks.forEach((chunk, n) => {
    const label =
      chunks.length > 1 ? `change ${n + 1} of ${chunks.length} in ${path}` : `the change in ${path}`;
    if (chunk.context !== undefined) {
      const at = seek(lines, [chunk.context], cursor, false);
      if (at === -1)
        throw new ToolFailure(
          "not_found",
          `${label}: the line "@@ ${chunk.context}" was not found${cursor > 0 ? " after the previous change" : ""}`,
        );
      cursor = at + 1;
    }
    if (chunk.oldLines.length === 0) {
      // Pure insertion: after the anchor, or at the end of the file.
      const at = chunk.context !== undefined && !chunk.endOfFile ? cursor : lines.length;
      replacements.push({ at, remove: 0, insert: chunk.newLines });
      cursor = at;
      return;
    }
    let old = chunk.oldLines;
    let neu = chunk.newLines;
    let at = seek(lines, old, cursor, chunk.endOfFile);
    // A trailing empty context line often stands for the file's final newline.
    if (at === -1 && old.at(-1) === "") {
      old = old.slice(0, -1);
      if (neu.at(-1) === "") neu = neu.slice(0, -1);
      at = seek(lines, old, cursor, chunk.endOfFile);
    }
    if (at === -1) {
      const shown = old.slice(0, 3).join("\n");
      throw new ToolFailure(
        "not_found",
        `${label}: these lines were not found${chunk.endOfFile ? " at the end of the file" : ""}${cursor > 0 ? " after the previous change" : ""}:\n${shown}${old.length > 3 ? "\n…" : ""}\nRead the file again and make the context and "-" lines match it exactly.`,
      );
    }
    replacements.push({ at, remove: old.length, insert: neu });
    cursor = at + old.length;
  });
  const out = [...lines];
  for (const r of [...replacements].reverse()) out.splice(r.at, r.remove, ...r.insert);
  return out.length > 0 ? `${out.join("\n")}\n` : "";
}
