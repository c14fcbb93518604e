// Decodes raw terminal input (a TTY in raw mode) into key events.
//
// Reads can split an escape sequence anywhere (a slow link, a busy pty), so an
// incomplete sequence at the end of a read is kept and completed by the next one.
// A lone ESC is ambiguous — the Escape key, or the first byte of a sequence still
// on its way — and is only read as Escape when nothing follows within
// ESCAPE_TIMEOUT_MS: the caller arms a timer while `pending` is true and calls
// `flush()` when it fires.
//
// Understood: xterm CSI/SS3 keys with modifier parameters (`CSI 1;5D` is Ctrl-Left),
// xterm modifyOtherKeys (`CSI 27;2;13~` is Shift-Enter), the kitty keyboard
// protocol's `CSI code;mods u`, Alt as an ESC prefix, and bracketed paste.

export type NamedKey =
  | "enter"
  | "newline"
  | "escape"
  | "backspace"
  | "delete"
  | "tab"
  | "backtab"
  | "up"
  | "down"
  | "left"
  | "right"
  | "home"
  | "end"
  | "pageup"
  | "pagedown"
  | "ctrl-c"
  | "ctrl-d"
  | "ctrl-u"
  | "ctrl-w"
  | "ctrl-k"
  | "ctrl-o"
  | "ctrl-l"
  | "ctrl-r"
  | "ctrl-g"
  | "ctrl-t"
  | "ctrl-p"
  | "ctrl-n"
  | "ctrl-v"
  | "word-left"
  | "word-right"
  | "word-backspace"
  | "word-delete";

export type Key =
  | { name: "text"; text: string }
  | { name: "paste"; text: string }
  | { name: NamedKey; shift?: true };

/** How long a lone ESC waits for the rest of a sequence before it is the Escape key. */
export const ESCAPE_TIMEOUT_MS = 60;

const CONTROL: Record<string, NamedKey> = {
  "\r": "enter",
  // Ctrl-J (and what many terminals send for Shift-Enter when configured to).
  "\n": "newline",
  "\x7f": "backspace",
  "\b": "backspace",
  "\t": "tab",
  "\x03": "ctrl-c",
  "\x04": "ctrl-d",
  "\x15": "ctrl-u",
  "\x17": "word-backspace",
  "\x0b": "ctrl-k",
  "\x0f": "ctrl-o",
  "\x0c": "ctrl-l",
  "\x12": "ctrl-r",
  "\x07": "ctrl-g",
  "\x14": "ctrl-t",
  "\x10": "ctrl-p",
  "\x0e": "ctrl-n",
  "\x16": "ctrl-v",
  "\x01": "home",
  "\x05": "end",
  "\x02": "left",
  "\x06": "right",
};

/** Final byte (and for `~`, the first parameter) of CSI/SS3 sequences. */
const CSI_FINAL: Record<string, NamedKey> = {
  A: "up",
  B: "down",
  C: "right",
  D: "left",
  H: "home",
  F: "end",
  Z: "backtab",
};

const TILDE: Record<string, NamedKey> = {
  "1": "home",
  "7": "home",
  "4": "end",
  "8": "end",
  "3": "delete",
  "5": "pageup",
  "6": "pagedown",
};

/** Alt+letter: the readline word motions. */
const ALT: Record<string, NamedKey> = {
  b: "word-left",
  f: "word-right",
  d: "word-delete",
  "\x7f": "word-backspace",
  "\b": "word-backspace",
  "\r": "newline",
  "\n": "newline",
};

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

/** Modifier bits of an xterm/kitty parameter (which is 1 + the bit set). */
function mods(param: string | undefined): { shift: boolean; alt: boolean; ctrl: boolean } {
  const m = Math.max(0, Number((param ?? "1").split(":")[0] || "1") - 1);
  return { shift: (m & 1) !== 0, alt: (m & 2) !== 0, ctrl: (m & 4) !== 0 };
}

/** The key a Unicode code point names under modifiers (kitty `u`, modifyOtherKeys `27;m;c~`). */
function codepointKey(code: number, param: string | undefined): Key | undefined {
  const m = mods(param);
  if (code === 13) return m.shift || m.alt || m.ctrl ? { name: "newline" } : { name: "enter" };
  if (code === 27) return { name: "escape" };
  if (code === 9) return m.shift ? { name: "backtab" } : { name: "tab" };
  if (code === 127 || code === 8) return m.alt || m.ctrl ? { name: "word-backspace" } : { name: "backspace" };
  if (code < 32) return undefined;
  const ch = String.fromCodePoint(code);
  if (m.ctrl) {
    const control = CONTROL[String.fromCharCode(ch.toLowerCase().charCodeAt(0) & 0x1f)];
    return control ? { name: control } : undefined;
  }
  if (m.alt) {
    const alt = ALT[ch];
    return alt ? { name: alt } : undefined;
  }
  return { name: "text", text: m.shift ? ch.toUpperCase() : ch };
}

function withMods(name: NamedKey, param: string | undefined): Key {
  const m = mods(param);
  if (m.ctrl || m.alt) {
    if (name === "left") return { name: "word-left" };
    if (name === "right") return { name: "word-right" };
    if (name === "delete") return { name: "word-delete" };
  }
  return m.shift ? { name, shift: true } : { name };
}

type Parsed = { key: Key | undefined; length: number } | "incomplete";

/** Parses the sequence starting with ESC at `s[0]`. */
function parseEscape(s: string): Parsed {
  if (s.length === 1) return "incomplete";
  const second = s[1]!;
  if (second === "[") {
    // CSI: parameters 0x30-0x3f, intermediates 0x20-0x2f, one final byte 0x40-0x7e.
    let j = 2;
    while (j < s.length && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x3f) j++;
    while (j < s.length && s.charCodeAt(j) >= 0x20 && s.charCodeAt(j) <= 0x2f) j++;
    if (j >= s.length) return "incomplete";
    const final = s[j]!;
    if (s.charCodeAt(j) < 0x40 || s.charCodeAt(j) > 0x7e) return { key: undefined, length: j };
    const params = s.slice(2, j).replace(/^[<=>?]/, "");
    const parts = params.split(";");
    const length = j + 1;
    if (final === "~") {
      if (parts[0] === "27" && parts.length >= 3)
        return { key: codepointKey(Number(parts[2]), parts[1]), length };
      const name = TILDE[parts[0] ?? ""];
      return { key: name ? withMods(name, parts[1]) : undefined, length };
    }
    if (final === "u") {
      const code = Number((parts[0] ?? "").split(":")[0]);
      return { key: Number.isFinite(code) ? codepointKey(code, parts[1]) : undefined, length };
    }
    const name = CSI_FINAL[final];
    // Focus reports, mouse, device answers: not keys.
    return { key: name ? withMods(name, parts[1]) : undefined, length };
  }
  if (second === "O") {
    if (s.length < 3) return "incomplete";
    const name = CSI_FINAL[s[2]!];
    return { key: name ? { name } : undefined, length: 3 };
  }
  if (second === "\x1b") {
    // ESC ESC: Escape pressed twice (or Alt on a key that itself sends ESC [...]).
    return { key: { name: "escape" }, length: 1 };
  }
  // Alt as an ESC prefix.
  const alt = ALT[second];
  if (alt) return { key: { name: alt }, length: 2 };
  const cp = s.codePointAt(1)!;
  return { key: undefined, length: 1 + String.fromCodePoint(cp).length };
}

export class KeyDecoder {
  private paste: string | undefined;
  private rest = "";

  /** True while the input ends in an incomplete sequence (arm the Escape timer). */
  get pending(): boolean {
    return this.rest !== "";
  }

  /** Keys in `chunk`, in order. Consecutive printable characters become one text key. */
  decode(chunk: string): Key[] {
    const keys: Key[] = [];
    const s = this.rest + chunk;
    this.rest = "";
    let text = "";
    const flush = () => {
      if (text) keys.push({ name: "text", text });
      text = "";
    };
    let i = 0;
    while (i < s.length) {
      if (this.paste !== undefined) {
        this.paste += s.slice(i);
        i = s.length;
        const end = this.paste.indexOf(PASTE_END);
        if (end < 0) {
          // Keep a possible partial end marker out of the text until it completes.
          return keys;
        }
        keys.push({ name: "paste", text: this.paste.slice(0, end) });
        const after = this.paste.slice(end + PASTE_END.length);
        this.paste = undefined;
        keys.push(...this.decode(after));
        return keys;
      }
      const ch = s[i]!;
      if (ch === "\x1b") {
        const tail = s.slice(i);
        if (tail.startsWith(PASTE_START)) {
          flush();
          this.paste = "";
          i += PASTE_START.length;
          continue;
        }
        const parsed = parseEscape(tail);
        if (parsed === "incomplete" || (PASTE_START.startsWith(tail) && tail.length > 1)) {
          flush();
          this.rest = tail;
          return keys;
        }
        if (parsed.key?.name === "text") text += parsed.key.text;
        else if (parsed.key) {
          flush();
          keys.push(parsed.key);
        }
        i += parsed.length;
        continue;
      }
      const control = CONTROL[ch];
      if (control) {
        flush();
        // CRLF (a line pasted without bracketed paste) is one Enter.
        if (ch === "\r" && s[i + 1] === "\n") i++;
        keys.push({ name: control });
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

  /** Resolves what is pending once no more input came: a lone ESC is the Escape key. */
  flush(): Key[] {
    const rest = this.rest;
    this.rest = "";
    if (rest === "") return [];
    if (rest === "\x1b") return [{ name: "escape" }];
    // An unfinished sequence: Alt+[ or Alt+O typed on their own, else noise.
    return [];
  }
}
