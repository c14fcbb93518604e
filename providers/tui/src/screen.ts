// The differential terminal renderer. Finished content is written once into the
// terminal's own scrollback ("committed"); only a small live region at the bottom
// (the streaming line, tool output tail, prompt, status line) is redrawn, and of
// that only the rows that changed since the previous frame. Frames are coalesced
// (one per tick however many tokens arrived) and written in a single write()
// inside a synchronized-update bracket, so the terminal never shows half a frame.
import { visibleWidth, wrapLine } from "./style.ts";

export interface TerminalOutput {
  write(data: string): unknown;
  readonly columns?: number;
  readonly rows?: number;
}

export interface Frame {
  /** Logical lines of the live region; wrapped to the terminal width here. */
  lines: string[];
  /** Where the visible cursor goes, as [logical line, column]; hidden when absent. */
  cursor?: [number, number];
}

const SYNC_ON = "\x1b[?2026h";
const SYNC_OFF = "\x1b[?2026l";
const HIDE = "\x1b[?25l";
const SHOW = "\x1b[?25h";

export class Screen {
  private readonly out: TerminalOutput;
  /** Physical rows currently on screen for the live region. */
  private rows: string[] = [];
  /** Row of the live region the cursor sits on after the last frame. */
  private cursorRow = 0;
  private pending: Frame | undefined;
  private committed: string[] = [];
  private timer: NodeJS.Immediate | undefined;
  private closed = false;
  /** Bytes written so far (tests use it to check frames stay small). */
  bytesWritten = 0;

  constructor(out: TerminalOutput) {
    this.out = out;
  }

  get width(): number {
    return Math.max(10, (this.out.columns ?? 80) - 1);
  }

  get height(): number {
    return Math.max(4, this.out.rows ?? 24);
  }

  /** Queues lines for the scrollback above the live region. */
  commit(lines: readonly string[]): void {
    this.committed.push(...lines);
    this.schedule();
  }

  /** Replaces the live region on the next tick. */
  update(frame: Frame): void {
    this.pending = frame;
    this.schedule();
  }

  /**
   * Forgets what is on screen and erases the live region. After a resize the terminal
   * has reflowed it: a row wider than the new width now takes several rows (terminals
   * that reflow — tmux, kitty, iTerm2, VTE, Windows Terminal — wrap it; explicit line
   * ends never join), so the way up to its top is counted in the new width.
   */
  invalidate(): void {
    const cols = Math.max(1, this.out.columns ?? 80);
    let up = 0;
    for (let i = 0; i < this.cursorRow && i < this.rows.length; i++)
      up += Math.max(1, Math.ceil(visibleWidth(this.rows[i]!) / cols));
    up += Math.floor(this.cursorCol / cols);
    this.write(`${this.up(up)}\r\x1b[J`);
    this.rows = [];
    this.cursorRow = 0;
    this.physical = 1;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setImmediate(() => {
      this.timer = undefined;
      this.flush();
    });
  }

  private up(n: number): string {
    return n > 0 ? `\x1b[${n}A` : "";
  }

  private write(data: string): void {
    this.bytesWritten += Buffer.byteLength(data);
    this.out.write(data);
  }

  /** Draws now: committed lines first, then the changed rows of the live region. */
  flush(): void {
    if (this.closed) return;
    const frame = this.pending ?? { lines: [] };
    const width = this.width;
    // Wrap each logical line; remember where each one starts for the cursor.
    const starts: number[] = [];
    let next: string[] = [];
    for (const line of frame.lines) {
      starts.push(next.length);
      next.push(...wrapLine(line, width));
    }
    // Never taller than the terminal: rows scrolled off could not be reached again.
    const cut = Math.max(0, next.length - (this.height - 1));
    if (cut > 0) next = next.slice(cut);
    const cursorKey = frame.cursor ? `${frame.cursor[0]}:${frame.cursor[1]}` : "";

    let buf = "";
    let cur = this.cursorRow;
    let from = 0;
    if (this.committed.length > 0) {
      // Erase the live region, print the new scrollback lines, then draw it anew.
      buf += `${this.up(cur)}\r\x1b[J`;
      for (const line of this.committed) for (const row of wrapLine(line, width)) buf += `${row}\r\n`;
      this.committed = [];
      this.rows = [];
      this.physical = 1;
      cur = 0;
    } else {
      while (from < next.length && from < this.rows.length && next[from] === this.rows[from]) from++;
      if (from === next.length && next.length === this.rows.length && cursorKey === this.lastCursor) return;
    }
    const moveTo = (r: number) => {
      if (r < cur) buf += this.up(cur - r);
      else if (r > cur) buf += `\x1b[${r - cur}B`;
      buf += "\r";
      cur = r;
    };
    for (let i = from; i < next.length; i++) {
      if (i < this.rows.length && next[i] === this.rows[i]) continue; // already on screen
      if (i < this.physical) moveTo(i);
      else {
        moveTo(this.physical - 1);
        while (cur < i) {
          buf += "\r\n";
          cur++;
        }
        this.physical = i + 1;
      }
      buf += `${next[i]}\x1b[K`;
    }
    if (next.length < this.rows.length) {
      // Clear what a taller frame left below.
      moveTo(next.length);
      buf += "\x1b[J";
    }
    const cursor = frame.cursor;
    if (cursor && starts[cursor[0]] !== undefined && next.length > 0) {
      const col = Math.min(cursor[1], visibleWidth(frame.lines[cursor[0]] ?? ""));
      const target = Math.max(
        0,
        Math.min(next.length - 1, starts[cursor[0]]! + Math.floor(col / width) - cut),
      );
      moveTo(target);
      const c = col % width;
      this.cursorCol = c;
      buf += `${c > 0 ? `\x1b[${c}C` : ""}${SHOW}`;
    } else {
      if (next.length > 0) moveTo(next.length - 1);
      this.cursorCol = 0;
      buf += HIDE;
    }
    this.rows = next;
    this.cursorRow = cur;
    this.lastCursor = cursorKey;
    if (buf !== "") this.write(SYNC_ON + buf + SYNC_OFF);
  }

  private lastCursor = "";
  /** Column of the cursor after the last frame. */
  private cursorCol = 0;
  /** Physical rows known to exist from the top of the live region down. */
  private physical = 1;

  /** Leaves the live region on screen, moves below it and shows the cursor. */
  close(): void {
    if (this.closed) return;
    if (this.timer) {
      clearImmediate(this.timer);
      this.timer = undefined;
    }
    this.flush();
    this.closed = true;
    const below = this.rows.length - 1 - this.cursorRow;
    this.write(`${below > 0 ? `\x1b[${below}B` : ""}\r\n${SHOW}`);
  }
}
