// A minimal terminal emulator for tests: enough of VT100 to replay what Screen
// writes (cursor movement, erase, scrolling) and read back what a user would see.
import { charWidth } from "../src/style.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: escape sequences are what it parses
const CSI = /^\x1b\[(\??)([0-9;]*)([A-Za-z])/;

export class VirtualTerminal {
  readonly columns: number;
  readonly rows: number;
  readonly isTTY = true;
  /** Visible rows; scrolled-off rows move to `scrollback`. */
  screen: string[][];
  scrollback: string[] = [];
  row = 0;
  col = 0;
  writes: string[] = [];
  cursorVisible = true;

  constructor(columns = 60, rows = 20) {
    this.columns = columns;
    this.rows = rows;
    this.screen = Array.from({ length: rows }, () => []);
  }

  write(data: string): boolean {
    this.writes.push(data);
    let i = 0;
    while (i < data.length) {
      const ch = data[i]!;
      if (ch === "\x1b") {
        const m = CSI.exec(data.slice(i));
        if (!m) {
          i++;
          continue;
        }
        this.csi(m[1]!, m[2]!, m[3]!);
        i += m[0].length;
        continue;
      }
      if (ch === "\r") this.col = 0;
      else if (ch === "\n") this.lineFeed();
      else if (ch === "\x07") {
        // bell
      } else {
        const cp = data.codePointAt(i)!;
        const s = String.fromCodePoint(cp);
        if (this.col >= this.columns) {
          this.col = 0;
          this.lineFeed();
        }
        const line = this.screen[this.row]!;
        while (line.length < this.col) line.push(" ");
        line[this.col] = s;
        this.col += Math.max(1, charWidth(cp));
        i += s.length;
        continue;
      }
      i++;
    }
    return true;
  }

  private lineFeed(): void {
    if (this.row === this.rows - 1) {
      this.scrollback.push(this.screen.shift()!.join("").trimEnd());
      this.screen.push([]);
    } else this.row++;
  }

  private csi(priv: string, params: string, final: string): void {
    const n = Number(params || "1");
    if (priv === "?") {
      if (params === "25") this.cursorVisible = final === "h";
      return;
    }
    switch (final) {
      case "A":
        this.row = Math.max(0, this.row - n);
        break;
      case "B":
        this.row = Math.min(this.rows - 1, this.row + n);
        break;
      case "C":
        this.col = Math.min(this.columns - 1, this.col + n);
        break;
      case "K":
        this.screen[this.row]!.length = Math.min(this.screen[this.row]!.length, this.col);
        break;
      case "J":
        this.screen[this.row]!.length = Math.min(this.screen[this.row]!.length, this.col);
        for (let r = this.row + 1; r < this.rows; r++) this.screen[r] = [];
        break;
      default:
        break; // SGR and the rest do not move anything
    }
  }

  /** Scrollback plus the visible screen, trailing blank rows dropped. */
  text(): string {
    const all = [...this.scrollback, ...this.screen.map((r) => r.join("").trimEnd())];
    while (all.length > 0 && all.at(-1) === "") all.pop();
    return all.join("\n");
  }

  visible(): string[] {
    return this.screen.map((r) => r.join("").trimEnd());
  }

  bytes(): number {
    return this.writes.reduce((n, w) => n + Buffer.byteLength(w), 0);
  }
}
