import { create } from "@bufbuild/protobuf";
import { ContextSectionSchema, Stability } from "@pluggableharness/protocol/content";
import { ToolDeclarationSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  placeCacheBreakpoints,
  stabilityOrderWarnings,
  toolListFingerprint,
} from "../../src/domain/cache-breakpoints.ts";

const tools = [create(ToolDeclarationSchema, { name: "read_file", description: "reads" })];
const section = (stability: Stability) =>
  create(ContextSectionSchema, { provider: "ctx", label: "AGENTS.md", stability });
const explicit = {
  supported: true,
  explicitMarkers: true,
  implicitAutomatic: false,
  keepaliveSupported: false,
} as never;
const implicitOnly = {
  supported: true,
  explicitMarkers: false,
  implicitAutomatic: true,
  keepaliveSupported: false,
} as never;
const cases = (bps: ReturnType<typeof placeCacheBreakpoints>) => bps.map((b) => b.position.case);

describe("cache-breakpoint placement", () => {
  it("a breakpoint goes after the tools when the tool list is stable", () => {
    const fp = toolListFingerprint(tools);
    expect(
      cases(
        placeCacheBreakpoints({
          caching: explicit,
          tools,
          previousToolsFingerprint: fp,
          assembledContext: [],
        }),
      ),
    ).toEqual(["afterTools"]);
  });

  it("no breakpoint after the tools when the tool list changed since the previous turn", () => {
    const before = toolListFingerprint([create(ToolDeclarationSchema, { name: "other" })]);
    expect(
      placeCacheBreakpoints({
        caching: explicit,
        tools,
        previousToolsFingerprint: before,
        assembledContext: [],
      }),
    ).toEqual([]);
  });

  it("a breakpoint goes after the assembled context when its leading sections are static", () => {
    const ctx = [section(Stability.STATIC), section(Stability.DYNAMIC)];
    expect(cases(placeCacheBreakpoints({ caching: explicit, tools: [], assembledContext: ctx }))).toEqual([
      "afterAssembledContext",
    ]);
    expect(
      placeCacheBreakpoints({ caching: explicit, tools: [], assembledContext: [section(Stability.DYNAMIC)] }),
    ).toEqual([]);
  });

  it("tools then static context: both breakpoints, in prefix order", () => {
    expect(
      cases(
        placeCacheBreakpoints({ caching: explicit, tools, assembledContext: [section(Stability.STATIC)] }),
      ),
    ).toEqual(["afterTools", "afterAssembledContext"]);
  });

  it("the request carries no breakpoints for a model without explicit markers", () => {
    for (const caching of [implicitOnly, undefined]) {
      expect(
        placeCacheBreakpoints({ caching, tools, assembledContext: [section(Stability.STATIC)] }),
      ).toEqual([]);
    }
  });

  it("the tool-list fingerprint ignores nothing that the model sees", () => {
    const changed = [create(ToolDeclarationSchema, { name: "read_file", description: "reads files" })];
    expect(toolListFingerprint(changed)).not.toBe(toolListFingerprint(tools));
    expect(toolListFingerprint(tools)).toBe(
      toolListFingerprint([create(ToolDeclarationSchema, { name: "read_file", description: "reads" })]),
    );
  });
});

describe("context stability order", () => {
  it("warns when a dynamic context provider is declared before a static one", () => {
    const w = stabilityOrderWarnings([
      { provider: "base", stability: Stability.STATIC },
      { provider: "git", stability: Stability.DYNAMIC },
      { provider: "agents-md", stability: Stability.STATIC },
    ]);
    expect(w).toHaveLength(1);
    expect(w[0]).toContain('"git"');
    expect(w[0]).toContain('"agents-md"');
    expect(
      stabilityOrderWarnings([
        { provider: "a", stability: Stability.STATIC },
        { provider: "b", stability: Stability.DYNAMIC },
      ]),
    ).toEqual([]);
  });
});
