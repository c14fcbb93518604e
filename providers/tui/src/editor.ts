// A one-line input editor with history: the prompt box, argument editing and
// answers to questions all use it.
import type { Key } from "./keys.ts";

export class LineEditor {
  text = "";
  cursor = 0;
  private readonly history: string[] = [];
  private historyIndex = 0;

  set(text: string): void {
    this.text = text;
    this.cursor = text.length;
  }

  clear(): void {
    this.set("");
  }

  /** Records a submitted line for up/down recall. */
  remember(line: string): void {
    if (line && this.history.at(-1) !== line) this.history.push(line);
    this.historyIndex = this.history.length;
  }

  /** Applies an editing key; returns false for keys it does not handle. */
  apply(key: Key): boolean {
    switch (key.name) {
      case "text":
      case "paste": {
        const t = key.text.replace(/\r\n?|\n/g, " ");
        this.text = this.text.slice(0, this.cursor) + t + this.text.slice(this.cursor);
        this.cursor += t.length;
        return true;
      }
      case "backspace":
        if (this.cursor > 0) {
          this.text = this.text.slice(0, this.cursor - 1) + this.text.slice(this.cursor);
          this.cursor--;
        }
        return true;
      case "delete":
        this.text = this.text.slice(0, this.cursor) + this.text.slice(this.cursor + 1);
        return true;
      case "left":
        this.cursor = Math.max(0, this.cursor - 1);
        return true;
      case "right":
        this.cursor = Math.min(this.text.length, this.cursor + 1);
        return true;
      case "home":
        this.cursor = 0;
        return true;
      case "end":
        this.cursor = this.text.length;
        return true;
      case "ctrl-u":
        this.text = this.text.slice(this.cursor);
        this.cursor = 0;
        return true;
      case "ctrl-w": {
        const before = this.text.slice(0, this.cursor).replace(/\S+\s*$/, "");
        this.text = before + this.text.slice(this.cursor);
        this.cursor = before.length;
        return true;
      }
      case "up":
        if (this.historyIndex > 0) this.set(this.history[--this.historyIndex]!);
        return true;
      case "down":
        if (this.historyIndex < this.history.length) {
          this.historyIndex++;
          this.set(this.history[this.historyIndex] ?? "");
        }
        return true;
      default:
        return false;
    }
  }
}
