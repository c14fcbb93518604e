// A one-screen list picker on the terminal: ↑/↓ (or Ctrl-P/Ctrl-N) move, typing filters,
// Enter chooses, Esc or Ctrl-C gives up. `agent run --resume` without an id uses it to
// choose a session before the kernel starts, and the UI's /resume to switch sessions.
// It draws below the cursor and erases what it drew when it ends, leaving the
// scrollback as it found it.
import { ESCAPE_TIMEOUT_MS, KeyDecoder } from "./keys.ts";
import { painterFor, sanitize, visibleWidth } from "./style.ts";

export interface PickerItem {
  /** What Enter returns. */
  readonly value: string;
  /** One line; cut to the terminal's width. */
  readonly label: string;
}

export interface PickerInput {
  on(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  removeListener(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  setRawMode?(mode: boolean): unknown;
  resume?(): unknown;
  pause?(): unknown;
}

export interface PickerOutput {
  write(s: string): unknown;
  readonly columns?: number;
  readonly rows?: number;
}

export interface PickerOptions {
  readonly input: PickerInput;
  readonly output: PickerOutput;
  readonly title: string;
  readonly items: readonly PickerItem[];
  readonly env?: NodeJS.ProcessEnv;
}

/** The rows a view of `items` shows: those matching every word of `filter`, in order. */
export function filterItems(items: readonly PickerItem[], filter: string): PickerItem[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  return items.filter((i) => {
    const text = `${i.value} ${i.label}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

function cut(text: string, width: number): string {
  if (visibleWidth(text) <= width) return text;
  let out = "";
  for (const ch of text) {
    if (visibleWidth(out + ch) > width - 1) break;
    out += ch;
  }
  return `${out}…`;
}

/** Resolves with the chosen item's value, or undefined when the operator gave up. */
export function pick(options: PickerOptions): Promise<string | undefined> {
  const { input, output, items } = options;
  const p = painterFor(true, options.env ?? process.env);
  const keys = new KeyDecoder();
  let filter = "";
  let index = 0;
  let drawn = 0;
  let escapeTimer: NodeJS.Timeout | undefined;

  const view = () => filterItems(items, filter);
  const draw = () => {
    const width = Math.max(20, (output.columns ?? 80) - 1);
    const height = Math.max(3, Math.min(15, (output.rows ?? 24) - 4));
    const shown = view();
    if (index >= shown.length) index = Math.max(0, shown.length - 1);
    const top = Math.max(0, Math.min(index - Math.floor(height / 2), shown.length - height));
    const lines = [
      p.paint(cut(sanitize(options.title), width), "accent"),
      `${p.paint("filter:", "dim")} ${sanitize(filter)}`,
    ];
    for (let i = top; i < Math.min(shown.length, top + height); i++) {
      const label = cut(sanitize(shown[i]!.label), width - 2);
      lines.push(i === index ? `${p.paint("›", "accent")} ${p.paint(label, "bold")}` : `  ${label}`);
    }
    if (shown.length === 0) lines.push(p.paint("  nothing matches", "dim"));
    lines.push(p.paint("↑/↓ move · type to filter · Enter choose · Esc cancel", "dim"));
    let s = drawn > 1 ? `\r\x1b[${drawn - 1}A` : "\r";
    s += "\x1b[J";
    s += lines.join("\r\n");
    output.write(s);
    drawn = lines.length;
  };
  const erase = () => {
    output.write(`${drawn > 1 ? `\r\x1b[${drawn - 1}A` : "\r"}\x1b[J`);
    drawn = 0;
  };

  return new Promise((resolvePick) => {
    const finish = (value: string | undefined) => {
      if (escapeTimer) clearTimeout(escapeTimer);
      input.removeListener("data", onData);
      erase();
      input.setRawMode?.(false);
      input.pause?.();
      resolvePick(value);
    };
    const handle = (k: ReturnType<KeyDecoder["decode"]>[number]): boolean => {
      const shown = view();
      switch (k.name) {
        case "enter":
          if (shown[index]) {
            finish(shown[index]!.value);
            return true;
          }
          return false;
        case "escape":
        case "ctrl-c":
        case "ctrl-d":
          finish(undefined);
          return true;
        case "up":
        case "ctrl-p":
          index = Math.max(0, index - 1);
          return false;
        case "down":
        case "ctrl-n":
        case "tab":
          index = Math.min(Math.max(0, shown.length - 1), index + 1);
          return false;
        case "pageup":
          index = Math.max(0, index - 10);
          return false;
        case "pagedown":
          index = Math.min(Math.max(0, shown.length - 1), index + 10);
          return false;
        case "backspace":
          filter = [...filter].slice(0, -1).join("");
          index = 0;
          return false;
        case "ctrl-u":
          filter = "";
          index = 0;
          return false;
        case "text":
        case "paste":
          filter += k.text.replace(/[\r\n]+/g, " ");
          index = 0;
          return false;
        default:
          return false;
      }
    };
    const onData = (chunk: Buffer | string) => {
      if (escapeTimer) clearTimeout(escapeTimer);
      for (const k of keys.decode(typeof chunk === "string" ? chunk : chunk.toString("utf8"))) {
        if (handle(k)) return;
      }
      if (keys.pending) {
        escapeTimer = setTimeout(() => {
          for (const k of keys.flush()) if (handle(k)) return;
          draw();
        }, ESCAPE_TIMEOUT_MS);
      }
      draw();
    };
    input.setRawMode?.(true);
    input.resume?.();
    input.on("data", onData);
    draw();
  });
}
