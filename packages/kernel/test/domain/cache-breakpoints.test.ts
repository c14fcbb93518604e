import { create, toJson } from "@bufbuild/protobuf";
import { ContextSectionSchema, MessageSchema, Role, Stability } from "@pluggableharness/protocol/content";
import { ToolDeclarationSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  contextBytes,
  MAX_CACHE_BREAKPOINTS,
  placeCacheBreakpoints,
  requestPrefix,
  stabilityOrderWarnings,
  toolListFingerprint,
} from "../../src/domain/cache-breakpoints.ts";
import { canonicalJson } from "../../src/domain/canonical-json.ts";

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
const positions = (bps: ReturnType<typeof placeCacheBreakpoints>) =>
  bps.map((b) => (b.position.case === "afterMessageIndex" ? Number(b.position.value) : b.position.case));
const msg = (role: Role, text: string) =>
  create(MessageSchema, { role, content: [{ block: { case: "text", value: { text } } }] });
/** A conversation of n messages: user, assistant, user, ... */
const conversation = (n: number) =>
  Array.from({ length: n }, (_, i) => msg(i % 2 === 0 ? Role.USER : Role.ASSISTANT, `m${i}`));

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

  it("the conversation tail gets a breakpoint after its newest message", () => {
    const messages = conversation(1);
    expect(
      positions(placeCacheBreakpoints({ caching: explicit, tools, assembledContext: [], messages })),
    ).toEqual(["afterTools", 0]);
  });

  it("later requests also mark the previous request's newest message, the entry they read", () => {
    const ctx = [section(Stability.STATIC)];
    const before = conversation(3);
    const previous = requestPrefix(tools, ctx, before);
    const now = [...before, msg(Role.ASSISTANT, "tool call"), msg(Role.USER, "tool result")];
    expect(
      positions(
        placeCacheBreakpoints({ caching: explicit, tools, assembledContext: ctx, messages: now, previous }),
      ),
    ).toEqual(["afterTools", "afterAssembledContext", 2, 4]);
  });

  it("never more than the vendor limit; the newest positions are the ones kept", () => {
    const ctx = [section(Stability.STATIC)];
    const before = conversation(3);
    const placed = placeCacheBreakpoints({
      caching: explicit,
      tools,
      assembledContext: ctx,
      messages: conversation(7),
      previous: requestPrefix(tools, ctx, before),
    });
    expect(placed.length).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
    expect(MAX_CACHE_BREAKPOINTS).toBe(4);
  });

  it("no conversation breakpoints while the prefix before the messages keeps changing", () => {
    const before = conversation(3);
    const previous = requestPrefix(tools, [section(Stability.DYNAMIC)], before);
    const changed = [
      create(ContextSectionSchema, {
        provider: "ctx",
        label: "git",
        stability: Stability.DYNAMIC,
        content: [{ block: { case: "text", value: { text: "new" } } }],
      }),
    ];
    expect(
      cases(
        placeCacheBreakpoints({
          caching: explicit,
          tools,
          assembledContext: changed,
          messages: conversation(5),
          previous,
        }),
      ),
    ).toEqual(["afterTools"]);
    // Unchanged dynamic context: the conversation is cached again.
    const same = requestPrefix(tools, changed, before);
    expect(
      positions(
        placeCacheBreakpoints({
          caching: explicit,
          tools,
          assembledContext: changed,
          messages: conversation(5),
          previous: same,
        }),
      ),
    ).toEqual(["afterTools", 2, 4]);
  });

  it("a rewritten history (the previous newest message changed) only marks the new tail", () => {
    const before = conversation(3);
    const previous = requestPrefix(tools, [], before);
    const rewritten = [
      msg(Role.USER, "summary"),
      msg(Role.ASSISTANT, "ok"),
      msg(Role.USER, "different"),
      msg(Role.ASSISTANT, "x"),
      msg(Role.USER, "y"),
    ];
    expect(
      positions(
        placeCacheBreakpoints({
          caching: explicit,
          tools,
          assembledContext: [],
          messages: rewritten,
          previous,
        }),
      ),
    ).toEqual(["afterTools", 4]);
  });

  it("the tool-list fingerprint ignores nothing that the model sees", () => {
    const changed = [create(ToolDeclarationSchema, { name: "read_file", description: "reads files" })];
    expect(toolListFingerprint(changed)).not.toBe(toolListFingerprint(tools));
    expect(toolListFingerprint(tools)).toBe(
      toolListFingerprint([create(ToolDeclarationSchema, { name: "read_file", description: "reads" })]),
    );
  });

  it("keeps each declaration's text yet fingerprints exactly the list's canonical JSON", () => {
    const list = [
      create(ToolDeclarationSchema, {
        name: "b",
        description: "second",
      }),
      create(ToolDeclarationSchema, { name: "a", description: "first" }),
    ];
    const whole = canonicalJson(list.map((t) => toJson(ToolDeclarationSchema, t)));
    expect(toolListFingerprint(list)).toBe(whole);
    // Asked again (the text kept), and in another order: still the list as it is now.
    expect(toolListFingerprint(list)).toBe(whole);
    expect(toolListFingerprint([list[1]!, list[0]!])).toBe(
      canonicalJson([list[1]!, list[0]!].map((t) => toJson(ToolDeclarationSchema, t))),
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

describe("per-request work", () => {
  it("encodes a request's context once for placement and the prefix record", () => {
    const ctx = [section(Stability.STATIC), section(Stability.DYNAMIC)];
    const first = contextBytes(ctx);
    expect(contextBytes(ctx)).toBe(first);
    // Another array of the same sections: encoded again, equal bytes.
    const copy = contextBytes([...ctx]);
    expect(copy).not.toBe(first);
    expect(copy).toEqual(first);
  });
});
