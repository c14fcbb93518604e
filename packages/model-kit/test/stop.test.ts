// The adapter-side stop-sequence matcher: what it holds back, where it cuts, and that the
// forwarded text never depends on how the vendor split its deltas.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StopSequenceMatcher } from "../src/index.ts";

describe("stop sequences", () => {
  it("holds back only a possible prefix and cuts at the earliest match", () => {
    const m = new StopSequenceMatcher(["###", "END"]);
    expect(m.push("abc #")).toBe("abc ");
    expect(m.push("#x")).toBe("##x");
    expect(m.push(" E")).toBe(" ");
    expect(m.push("ND tail")).toBe("");
    expect(m.matched).toBe("END");
    expect(m.push("more")).toBe("");
    expect(m.flush()).toBe("");
  });

  it("releases held text at the end when nothing matched", () => {
    const m = new StopSequenceMatcher(["STOP"]);
    expect(m.push("ST")).toBe("");
    expect(m.flush()).toBe("ST");
    expect(new StopSequenceMatcher([]).push("anything")).toBe("anything");
  });

  it("ignores empty sequences, which would otherwise match before any text", () => {
    const m = new StopSequenceMatcher(["", ""]);
    expect(m.active).toBe(false);
    expect(m.push("text")).toBe("text");
    expect(m.matched).toBeUndefined();
  });

  it("forwards exactly the text before the first match, however the text is split", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.array(fc.nat(30), { maxLength: 6 }), (body, cuts) => {
        const seqs = ["ab", "zzz"];
        const whole = `${body}`;
        const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
        const pieces: string[] = [];
        let prev = 0;
        for (const p of points) {
          pieces.push(whole.slice(prev, p));
          prev = p;
        }
        pieces.push(whole.slice(prev));
        const m = new StopSequenceMatcher(seqs);
        const out = pieces.map((p) => m.push(p)).join("") + m.flush();
        const hits = seqs.map((s) => whole.indexOf(s)).filter((i) => i >= 0);
        const first = hits.length ? Math.min(...hits) : -1;
        expect(out).toBe(first >= 0 ? whole.slice(0, first) : whole);
        expect(m.matched !== undefined).toBe(first >= 0);
      }),
    );
  });
});
