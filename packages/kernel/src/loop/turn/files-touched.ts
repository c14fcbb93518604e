// ContextRequest.files_touched / RecallRequest.files_touched: the files the session's tool
// calls named, derived by the kernel from the conversation itself (docs/decisions/context-and-memory.md). A call counts once its result came back without error;
// its path is whatever a path-shaped argument held (`path`, `file_path`, `notebook_path`,
// `file`, or the elements of `paths` / `files`), whichever provider served it. Paths are
// resolved against the working directory and given relative to it when inside it. The set
// outlives the messages it came from, so a compacted history keeps what was touched.
import { isAbsolute, relative, resolve, sep } from "node:path";
import type { JsonValue } from "@bufbuild/protobuf";
import type { Message } from "@pluggableharness/protocol/content";

/** Argument names whose string value is a file path. */
export const PATH_FIELDS: readonly string[] = ["path", "file_path", "notebook_path", "file"];
/** Argument names whose array of strings are file paths. */
export const PATH_LIST_FIELDS: readonly string[] = ["paths", "files"];
/** At most this many paths are kept: the most recently touched. */
export const MAX_FILES_TOUCHED = 200;

function pathsOf(input: Record<string, JsonValue> | undefined): string[] {
  if (!input) return [];
  const out: string[] = [];
  for (const f of PATH_FIELDS) {
    const v = input[f];
    if (typeof v === "string" && v !== "") out.push(v);
  }
  for (const f of PATH_LIST_FIELDS) {
    const v = input[f];
    if (Array.isArray(v)) for (const e of v) if (typeof e === "string" && e !== "") out.push(e);
  }
  return out;
}

function display(path: string, workingDirectory: string): string {
  const abs = isAbsolute(path) ? resolve(path) : resolve(workingDirectory, path);
  const rel = relative(workingDirectory, abs);
  if (rel === "") return ".";
  return rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel) ? abs : rel;
}

export class FilesTouched {
  /** path -> the order it was last touched in (Map keeps insertion order: re-inserted on touch). */
  readonly #paths = new Map<string, true>();
  /** tool_use ids already counted. */
  readonly #counted = new Set<string>();
  /** Calls seen but not answered yet, in call order: their ids and the paths they name. */
  readonly #pending = new Map<string, string[]>();
  /** How many messages of the history were read, and the last of them. */
  #read = 0;
  #last: Message | undefined;

  /**
   * Takes in every successful tool call of `history` not seen before. Called every turn,
   * it reads only the messages added since the last call; a history rewritten since
   * (compaction, a rewind) is read again from its start.
   */
  observe(history: readonly Message[], workingDirectory: string): void {
    let from = this.#read;
    if (from > history.length || (from > 0 && history[from - 1] !== this.#last)) {
      from = 0;
      this.#pending.clear();
    }
    for (let i = from; i < history.length; i++) {
      const answered = new Map<string, boolean>();
      for (const b of history[i]!.content) {
        if (b.block.case === "toolUse") {
          const use = b.block.value;
          if (!this.#counted.has(use.id))
            this.#pending.set(use.id, pathsOf(use.input as Record<string, JsonValue> | undefined));
        } else if (b.block.case === "toolResult")
          answered.set(b.block.value.toolUseId, b.block.value.isError);
      }
      if (answered.size === 0) continue;
      for (const [id, paths] of this.#pending) {
        const isError = answered.get(id);
        if (isError === undefined) continue;
        this.#pending.delete(id);
        this.#counted.add(id);
        if (isError) continue;
        for (const p of paths) {
          const key = display(p, workingDirectory);
          this.#paths.delete(key);
          this.#paths.set(key, true);
        }
      }
    }
    this.#read = history.length;
    this.#last = history.at(-1);
    while (this.#paths.size > MAX_FILES_TOUCHED) this.#paths.delete(this.#paths.keys().next().value!);
  }

  /** Oldest first, the most recently touched last. */
  list(): string[] {
    return [...this.#paths.keys()];
  }
}
