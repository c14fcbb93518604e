// The input editor: multi-line text with a cursor, readline-style motions, history
// with reverse search (Ctrl-R). The prompt box, argument editing and answers to
// questions all use it. Pasted text is kept verbatim, newlines included.
import type { Key } from "./keys.ts";
import { cutLine, graphemes, visibleWidth } from "./style.ts";

export interface EditorLayout {
  /** Display rows of the text, each at most the given width. */
  rows: string[];
  cursorRow: number;
  cursorCol: number;
}

export interface HistorySearch {
  query: string;
  /** Index in history of the current match, or -1 for none. */
  match: number;
}

function prevBoundary(text: string, i: number): number {
  let last = 0;
  for (const { index } of graphemes.segment(text.slice(0, i))) last = index;
  return i === 0 ? 0 : last;
}

function nextBoundary(text: string, i: number): number {
  if (i >= text.length) return text.length;
  const first = graphemes.segment(text.slice(i))[Symbol.iterator]().next();
  return first.done ? text.length : i + first.value.segment.length;
}

export class LineEditor {
  text = "";
  cursor = 0;
  /** Ctrl-R reverse search, while it is open. */
  search: HistorySearch | undefined;
  private readonly history: string[];
  private historyIndex: number;
  /** What was typed before walking into history, restored when walking back out. */
  private draft = "";
  private readonly onRemember: ((line: string) => void) | undefined;

  constructor(history: string[] = [], onRemember?: (line: string) => void) {
    this.history = [...history];
    this.historyIndex = this.history.length;
    this.onRemember = onRemember;
  }

  set(text: string): void {
    this.text = text;
    this.cursor = text.length;
  }

  clear(): void {
    this.set("");
    this.search = undefined;
  }

  /** Records a submitted entry for recall and search. */
  remember(line: string): void {
    if (line && this.history.at(-1) !== line) {
      this.history.push(line);
      this.onRemember?.(line);
    }
    this.historyIndex = this.history.length;
    this.draft = "";
  }

  get entries(): readonly string[] {
    return this.history;
  }

  private insert(t: string): void {
    this.text = this.text.slice(0, this.cursor) + t + this.text.slice(this.cursor);
    this.cursor += t.length;
  }

  private lineStart(i = this.cursor): number {
    return this.text.lastIndexOf("\n", i - 1) + 1;
  }

  private lineEnd(i = this.cursor): number {
    const e = this.text.indexOf("\n", i);
    return e < 0 ? this.text.length : e;
  }

  /**
   * Enter: `\` right before the cursor at the end of a line continues the entry on a
   * new line (the backslash is dropped); answers whether that happened.
   */
  continueLine(): boolean {
    if (this.cursor > 0 && this.text[this.cursor - 1] === "\\" && this.cursor === this.lineEnd()) {
      this.text = `${this.text.slice(0, this.cursor - 1)}\n${this.text.slice(this.cursor)}`;
      return true;
    }
    return false;
  }

  private moveVertical(dir: -1 | 1): boolean {
    const start = this.lineStart();
    const col = visibleWidth(this.text.slice(start, this.cursor));
    let target: number;
    if (dir < 0) {
      if (start === 0) return false;
      target = this.lineStart(start - 1);
    } else {
      const end = this.lineEnd();
      if (end >= this.text.length) return false;
      target = end + 1;
    }
    // Same column on the target line, or its end.
    const end = this.lineEnd(target);
    let i = target;
    while (i < end && visibleWidth(this.text.slice(target, nextBoundary(this.text, i))) <= col)
      i = nextBoundary(this.text, i);
    this.cursor = i;
    return true;
  }

  private recall(index: number): void {
    if (this.historyIndex === this.history.length) this.draft = this.text;
    this.historyIndex = index;
    this.set(index === this.history.length ? this.draft : this.history[index]!);
  }

  private findBack(query: string, from: number): number {
    const q = query.toLowerCase();
    for (let i = Math.min(from, this.history.length - 1); i >= 0; i--)
      if (this.history[i]!.toLowerCase().includes(q)) return i;
    return -1;
  }

  /** Keys while Ctrl-R search is open; every key is taken. */
  private searchKey(key: Key): void {
    const s = this.search!;
    switch (key.name) {
      case "text":
      case "paste":
        s.query += key.text.replace(/\n/g, " ");
        s.match = this.findBack(s.query, this.history.length - 1);
        return;
      case "backspace":
        s.query = s.query.slice(0, -1);
        s.match = s.query ? this.findBack(s.query, this.history.length - 1) : -1;
        return;
      case "ctrl-r":
        if (s.match > 0) {
          const older = this.findBack(s.query, s.match - 1);
          if (older >= 0) s.match = older;
        }
        return;
      case "escape":
      case "ctrl-g":
      case "ctrl-c":
        this.search = undefined;
        return;
      default:
        // Enter or any motion takes the match into the editor.
        if (s.match >= 0) {
          this.historyIndex = s.match;
          this.set(this.history[s.match]!);
        }
        this.search = undefined;
    }
  }

  /** Applies an editing key; returns false for keys it does not handle. */
  apply(key: Key): boolean {
    if (this.search) {
      const accept = key.name === "enter";
      this.searchKey(key);
      return !accept;
    }
    switch (key.name) {
      case "text":
        this.insert(key.text);
        return true;
      case "paste":
        this.insert(key.text.replace(/\r\n?/g, "\n"));
        return true;
      case "newline":
        this.insert("\n");
        return true;
      case "backspace":
        if (this.cursor > 0) {
          const p = prevBoundary(this.text, this.cursor);
          this.text = this.text.slice(0, p) + this.text.slice(this.cursor);
          this.cursor = p;
        }
        return true;
      case "delete":
        this.text = this.text.slice(0, this.cursor) + this.text.slice(nextBoundary(this.text, this.cursor));
        return true;
      case "left":
        this.cursor = prevBoundary(this.text, this.cursor);
        return true;
      case "right":
        this.cursor = nextBoundary(this.text, this.cursor);
        return true;
      case "home":
        this.cursor = this.lineStart();
        return true;
      case "end":
        this.cursor = this.lineEnd();
        return true;
      case "word-left": {
        const before = this.text.slice(0, this.cursor).replace(/\S+\s*$|\s+$/, "");
        this.cursor = before.length;
        return true;
      }
      case "word-right": {
        const m = /^\s*\S+/.exec(this.text.slice(this.cursor));
        this.cursor += m ? m[0].length : this.text.length - this.cursor;
        return true;
      }
      case "ctrl-u": {
        const start = this.lineStart();
        // At the start of a line it joins it to the one above, like Backspace.
        const from = start === this.cursor && start > 0 ? start - 1 : start;
        this.text = this.text.slice(0, from) + this.text.slice(this.cursor);
        this.cursor = from;
        return true;
      }
      case "ctrl-k": {
        const end = this.lineEnd();
        const to = end === this.cursor && end < this.text.length ? end + 1 : end;
        this.text = this.text.slice(0, this.cursor) + this.text.slice(to);
        return true;
      }
      case "word-backspace": {
        const before = this.text.slice(0, this.cursor).replace(/\S+\s*$|\s+$/, "");
        this.text = before + this.text.slice(this.cursor);
        this.cursor = before.length;
        return true;
      }
      case "word-delete": {
        const m = /^\s*\S+/.exec(this.text.slice(this.cursor));
        const to = this.cursor + (m ? m[0].length : this.text.length - this.cursor);
        this.text = this.text.slice(0, this.cursor) + this.text.slice(to);
        return true;
      }
      case "up":
      case "ctrl-p":
        if (key.name === "up" && this.moveVertical(-1)) return true;
        if (this.historyIndex > 0) this.recall(this.historyIndex - 1);
        return true;
      case "down":
      case "ctrl-n":
        if (key.name === "down" && this.moveVertical(1)) return true;
        if (this.historyIndex < this.history.length) this.recall(this.historyIndex + 1);
        return true;
      case "ctrl-r":
        this.search = { query: "", match: -1 };
        return true;
      default:
        return false;
    }
  }

  /** The text as display rows of at most `width` columns, and where the cursor is. */
  layout(width: number): EditorLayout {
    const rows: string[] = [];
    let cursorRow = 0;
    let cursorCol = 0;
    let offset = 0;
    for (const line of this.text.split("\n")) {
      const pieces = cutLine(line, width);
      let at = offset;
      pieces.forEach((piece, k) => {
        const end = at + piece.length;
        const last = k === pieces.length - 1;
        if (this.cursor >= at && (this.cursor < end || (last && this.cursor === end))) {
          cursorRow = rows.length;
          cursorCol = visibleWidth(piece.slice(0, this.cursor - at));
        }
        rows.push(piece);
        at = end;
      });
      offset += line.length + 1;
    }
    // A cursor past a full row sits at the start of the next one.
    if (cursorCol >= width) {
      cursorRow++;
      cursorCol = 0;
      if (cursorRow >= rows.length) rows.push("");
    }
    return { rows, cursorRow, cursorCol };
  }
}
