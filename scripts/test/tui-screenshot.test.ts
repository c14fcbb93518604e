// The screenshot renderer: SGR colours and styles read per cell, wide characters taking
// two cells, and a real PNG out of resvg with the DejaVu fonts.
import { describe, expect, it } from "vitest";
import { parseAnsi, renderPng, toSvg } from "../tui-screenshot.ts";

const E = String.fromCharCode(27);

describe("tui-screenshot", () => {
  it("reads colours, bold and dim per cell, and gives a wide character two cells", () => {
    const [row] = parseAnsi(`${E}[1;32mok${E}[0m 你${E}[2mx${E}[22m`);
    expect(row!.map((c) => c.ch)).toEqual(["o", "k", " ", "你", "", "x"]);
    expect(row![0]).toMatchObject({ bold: true, fg: "#98c379" });
    expect(row![2]).toMatchObject({ bold: false, fg: "#d8dee9" });
    expect(row![5]).toMatchObject({ dim: true });
    const svg = toSvg([row!], "t");
    // "x" sits in the sixth cell: after the two cells of 你.
    expect(svg).toMatch(/<text x="58\.15" [^>]*>x<\/text>/);
  });

  it("renders a PNG", async () => {
    const png = await renderPng(`${E}[36mhello${E}[0m`, "t");
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    // IHDR width at 2x zoom: (5 cells * 8.43 + 32 padding) * 2, rounded up.
    const width = new DataView(png.buffer, png.byteOffset).getUint32(16);
    expect(width).toBe(Math.ceil(5 * 8.43 + 32) * 2);
  });
});
