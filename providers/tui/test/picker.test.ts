// The list picker `--resume` (no id) and /resume open: keys move, typing filters, Enter
// chooses, Esc gives up, and what it drew is erased when it ends.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { filterItems, pick } from "../src/picker.ts";

const ITEMS = [
  { value: "01A", label: "01A  completed  fix the build" },
  { value: "01B", label: "01B  cancelled  explain the parser" },
  { value: "01C", label: "01C  failed  write the README" },
];

function terminal() {
  const input = Object.assign(new EventEmitter(), {
    raw: false,
    setRawMode(m: boolean) {
      input.raw = m;
    },
  });
  let written = "";
  const output = { columns: 60, rows: 20, write: (s: string) => (written += s) };
  return { input, output, written: () => written };
}

async function choose(chunks: string[]): Promise<{ value: string | undefined; out: string; raw: boolean }> {
  const t = terminal();
  const result = pick({
    input: t.input,
    output: t.output,
    title: "Resume",
    items: ITEMS,
    env: { NO_COLOR: "1" },
  });
  expect(t.input.raw).toBe(true);
  for (const c of chunks) t.input.emit("data", c);
  return { value: await result, out: t.written(), raw: t.input.raw };
}

describe("pick", () => {
  it("Enter takes the first; ↓ moves (also when the arrow arrives split in two reads)", async () => {
    expect((await choose(["\r"])).value).toBe("01A");
    expect((await choose(["\x1b[B", "\x1b[B", "\r"])).value).toBe("01C");
    expect((await choose(["\x1b", "[B", "\r"])).value).toBe("01B");
  });

  it("typing filters by every word; Backspace widens again", async () => {
    expect((await choose(["readme", "\r"])).value).toBe("01C");
    expect((await choose(["the pars", "\r"])).value).toBe("01B");
    expect((await choose(["zz", "\x7f\x7f", "\x1b[B", "\r"])).value).toBe("01B");
    expect(filterItems(ITEMS, "FIX build").map((i) => i.value)).toEqual(["01A"]);
  });

  it("Esc and Ctrl-C give up; the terminal leaves raw mode and the drawing is erased", async () => {
    const esc = await choose(["\x1b"]);
    // a lone ESC is Escape only after the split-sequence timeout
    expect(esc.value).toBeUndefined();
    expect(esc.raw).toBe(false);
    expect(esc.out.endsWith("\x1b[J")).toBe(true);
    expect(esc.out).toContain("fix the build");
    expect((await choose(["\x03"])).value).toBeUndefined();
    expect((await choose(["nothing like it", "\r", "\x03"])).value).toBeUndefined();
  });
});
