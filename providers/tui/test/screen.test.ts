import { describe, expect, it } from "vitest";
import { Screen } from "../src/screen.ts";
import { VirtualTerminal } from "./vt.ts";

function setup(columns = 40, rows = 12) {
  const vt = new VirtualTerminal(columns, rows);
  const screen = new Screen(vt);
  return { vt, screen };
}

describe("Screen (differential renderer)", () => {
  it("draws the live region and replaces it in place", () => {
    const { vt, screen } = setup();
    screen.update({ lines: ["one", "two", "> "], cursor: [2, 2] });
    screen.flush();
    expect(vt.text()).toBe("one\ntwo\n>");
    screen.update({ lines: ["one", "three", "> hi"], cursor: [2, 4] });
    screen.flush();
    expect(vt.text()).toBe("one\nthree\n> hi");
    expect([vt.row, vt.col]).toEqual([2, 4]);
  });

  it("rewrites only the rows that changed", () => {
    const { vt, screen } = setup(60, 20);
    const head = Array.from({ length: 8 }, (_, i) => `status row ${i} with some text in it`);
    screen.update({ lines: [...head, "streaming: a"] });
    screen.flush();
    const before = vt.bytes();
    const firstFrame = before;
    screen.update({ lines: [...head, "streaming: ab"] });
    screen.flush();
    const frame = vt.writes.at(-1)!;
    // One token costs one row, not the region: no unchanged row is written again.
    expect(frame).not.toContain("status row");
    expect(vt.bytes() - before).toBeLessThan(firstFrame / 5);
    expect(vt.text().split("\n").at(-1)).toBe("streaming: ab");
  });

  it("writes nothing when nothing changed", () => {
    const { vt, screen } = setup();
    screen.update({ lines: ["same"] });
    screen.flush();
    const n = vt.writes.length;
    screen.update({ lines: ["same"] });
    screen.flush();
    expect(vt.writes.length).toBe(n);
  });

  it("never clears the whole screen", () => {
    const { vt, screen } = setup();
    for (let i = 0; i < 30; i++) {
      screen.update({ lines: [`line ${i}`, "> "] });
      screen.flush();
      if (i % 5 === 0) {
        screen.commit([`committed ${i}`]);
        screen.flush();
      }
    }
    const all = vt.writes.join("");
    expect(all).not.toContain("\x1b[2J");
    expect(all).not.toContain("\x1b[H");
  });

  it("commits lines above the live region in order, into scrollback", () => {
    const { vt, screen } = setup(40, 6);
    screen.update({ lines: ["live", "> "] });
    screen.flush();
    for (let i = 1; i <= 8; i++) screen.commit([`msg ${i}`]);
    screen.flush();
    const lines = vt.text().split("\n");
    expect(lines.slice(0, 8)).toEqual(Array.from({ length: 8 }, (_, i) => `msg ${i + 1}`));
    expect(lines.slice(-2)).toEqual(["live", ">"]);
  });

  it("shrinks the region, clearing rows a taller frame left", () => {
    const { vt, screen } = setup();
    screen.update({ lines: ["a", "b", "c", "d"] });
    screen.flush();
    screen.update({ lines: ["a"] });
    screen.flush();
    expect(vt.text()).toBe("a");
    screen.update({ lines: [] });
    screen.flush();
    expect(vt.text()).toBe("");
  });

  it("wraps long lines itself and keeps the cursor on the wrapped row", () => {
    const { vt, screen } = setup(20, 10);
    const long = "x".repeat(45);
    screen.update({ lines: [long, "> abc"], cursor: [1, 5] });
    screen.flush();
    // width is columns - 1 = 19: 45 chars take 3 rows.
    expect(vt.visible().slice(0, 4)).toEqual(["x".repeat(19), "x".repeat(19), "x".repeat(7), "> abc"]);
    expect([vt.row, vt.col]).toEqual([3, 5]);
  });

  it("caps the live region below the terminal height", () => {
    const { vt, screen } = setup(30, 6);
    screen.update({ lines: Array.from({ length: 20 }, (_, i) => `row ${i}`) });
    screen.flush();
    screen.update({ lines: Array.from({ length: 20 }, (_, i) => `row ${i}!`) });
    screen.flush();
    // Only the last height-1 rows are drawn, and redrawing them stays in place.
    expect(vt.visible().filter((l) => l !== "")).toEqual([
      "row 15!",
      "row 16!",
      "row 17!",
      "row 18!",
      "row 19!",
    ]);
  });

  it("leaves the final frame on screen when closed", () => {
    const { vt, screen } = setup();
    screen.update({ lines: ["bye", "> "], cursor: [1, 2] });
    screen.close();
    expect(vt.text()).toBe("bye\n>");
    expect(vt.row).toBe(2);
  });

  it("after a narrowing resize, climbs the rows the terminal reflowed the live region into", () => {
    const writes: string[] = [];
    const out = { columns: 40, rows: 12, write: (d: string) => writes.push(d) };
    const screen = new Screen(out);
    screen.update({ lines: ["x".repeat(35), "short", "> typed"], cursor: [2, 7] });
    screen.flush();
    out.columns = 10;
    writes.length = 0;
    screen.invalidate();
    // 35 columns are 4 rows at width 10, "short" one: 5 rows above the prompt row.
    expect(writes.join("")).toBe("\x1b[5A\r\x1b[J");
  });
});
