// Decodes raw terminal input (a TTY in raw mode) into key events. Sequences are
// recognised within one read; a lone ESC byte is the Escape key, which is how every
// terminal delivers it when pressed on its own.

export type Key =
  | { name: "text"; text: string }
  | { name: "paste"; text: string }
  | {
      name:
        | "enter"
        | "escape"
        | "backspace"
        | "delete"
        | "tab"
        | "up"
        | "down"
        | "left"
        | "right"
        | "home"
        | "end"
        | "ctrl-c"
        | "ctrl-d"
        | "ctrl-u"
        | "ctrl-w"
        | "ctrl-o"
        | "ctrl-l";
    };

const CSI: Record<string, Key["name"]> = {
  A: "up",
  B: "down",
  C: "right",
  D: "left",
  H: "home",
  F: "end",
  "1~": "home",
  "4~": "end",
  "3~": "delete",
  "7~": "home",
  "8~": "end",
};

const CONTROL: Record<string, Key["name"]> = {
  "\r": "enter",
  "\n": "enter",
  "\x7f": "backspace",
  "\b": "backspace",
  "\t": "tab",
  "\x03": "ctrl-c",
  "\x04": "ctrl-d",
  "\x15": "ctrl-u",
  "\x17": "ctrl-w",
  "\x0f": "ctrl-o",
  "\x0c": "ctrl-l",
  "\x01": "home",
  "\x05": "end",
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal control sequences are the subject
const ESCAPE_SEQUENCE = /^\x1b(?:\[|O)([0-9;]*)([A-Za-z~])/;
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

export class KeyDecoder {
  private paste: string | undefined;

  /** Keys in `chunk`, in order. Consecutive printable characters become one text key. */
  decode(chunk: string): Key[] {
    const keys: Key[] = [];
    let text = "";
    const flush = () => {
      if (text) keys.push({ name: "text", text });
      text = "";
    };
    let i = 0;
    while (i < chunk.length) {
      if (this.paste !== undefined) {
        const end = chunk.indexOf(PASTE_END, i);
        if (end < 0) {
          this.paste += chunk.slice(i);
          return keys;
        }
        keys.push({ name: "paste", text: this.paste + chunk.slice(i, end) });
        this.paste = undefined;
        i = end + PASTE_END.length;
        continue;
      }
      const ch = chunk[i]!;
      if (ch === "\x1b") {
        flush();
        if (chunk.startsWith(PASTE_START, i)) {
          this.paste = "";
          i += PASTE_START.length;
          continue;
        }
        const m = ESCAPE_SEQUENCE.exec(chunk.slice(i));
        if (m) {
          const name = CSI[m[2] === "~" ? `${m[1]}~` : m[2]!];
          if (name) keys.push({ name } as Key);
          i += m[0].length;
          continue;
        }
        if (chunk[i + 1] === "\x1b") {
          keys.push({ name: "escape" });
          i += 1;
          continue;
        }
        // A lone ESC, or Alt+key (ESC prefix): both read as Escape here.
        keys.push({ name: "escape" });
        i += 1;
        if (i < chunk.length && chunk[i]! >= " ") i += 1;
        continue;
      }
      const control = CONTROL[ch];
      if (control) {
        flush();
        // CRLF from a pasted line is one Enter.
        if (ch === "\r" && chunk[i + 1] === "\n") i++;
        keys.push({ name: control } as Key);
        i++;
        continue;
      }
      if (ch < " ") {
        i++;
        continue;
      }
      text += ch;
      i++;
    }
    flush();
    return keys;
  }
}
