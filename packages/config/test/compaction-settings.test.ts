// settings { compaction { ... } } and `--compact-at`: what is accepted, the defaults, and a
// bad value reported at its own line and column (what `agent validate` prints).
import { describe, expect, it } from "vitest";
import { DEFAULT_COMPACTION, defaultSettings, loadConfigSource, parseCompactAt } from "../src/index.ts";

const source = (body: string) => `settings {
  compaction {
${body}
  }
}
`;

describe("compaction settings", () => {
  it("default to 80% of the usable window, on, with the model's own window", () => {
    expect(defaultSettings().compaction).toEqual({
      enabled: true,
      threshold: { kind: "percent", value: 80 },
      context_window: 0,
    });
    expect(DEFAULT_COMPACTION.threshold).toEqual({ kind: "percent", value: 80 });
  });

  it("read a percentage, a token count, the switch and the window cap", () => {
    const pct = loadConfigSource(source('    threshold = "65%"\n    enabled = false'), "agent.hcl", "/p");
    if (!pct.ok) throw new Error(JSON.stringify(pct.diagnostics));
    expect(pct.config.settings.compaction).toEqual({
      enabled: false,
      threshold: { kind: "percent", value: 65 },
      context_window: 0,
    });
    const tokens = loadConfigSource(
      source("    threshold = 120000\n    context_window = 64000"),
      "agent.hcl",
      "/p",
    );
    if (!tokens.ok) throw new Error(JSON.stringify(tokens.diagnostics));
    expect(tokens.config.settings.compaction.threshold).toEqual({ kind: "tokens", value: 120000 });
    expect(tokens.config.settings.compaction.context_window).toBe(64000);
  });

  it.each([
    ['    threshold = "180%"', "at most 100", 3, 17],
    ['    threshold = "soon"', "a percentage", 3, 17],
    ["    threshold = 12", "at least 1000", 3, 17],
    ["    context_window = 500", "at least 2000", 3, 22],
    ['    enabled = "yes"', "", 3, 15],
    ["    keep = 3", "", 3, 5],
  ])("reject %s at its line and column", (body, detail, line, column) => {
    const r = loadConfigSource(source(body), "agent.hcl", "/p");
    if (r.ok) throw new Error("accepted");
    const e = r.diagnostics.find((d) => d.severity === "error")!;
    expect([e.file, e.line, e.column]).toEqual(["agent.hcl", line, column]);
    expect(e.detail).toContain(detail);
  });

  it("--compact-at takes the same forms", () => {
    expect(parseCompactAt("60%")).toEqual({ kind: "percent", value: 60 });
    expect(parseCompactAt(" 50000 ")).toEqual({ kind: "tokens", value: 50000 });
    expect(parseCompactAt("0%")).toMatch(/greater than 0/);
    expect(parseCompactAt("1e5")).toMatch(/expected a percentage/);
  });
});
