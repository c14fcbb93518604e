// `agent sessions replay` loads only the providers whose recorded events it must ask to
// Render: a session written by the kernel and one tool provider starts that one plugin.
import { PluginCategory } from "@pluggableharness/protocol/common";
import { describe, expect, it } from "vitest";
import { providersNotNeeded } from "../src/commands/replay.ts";

const id = (category: PluginCategory, name: string, version = "0.1.0") => ({ category, name, version });

/** What a first-party package answers for every category, like installedProducers does. */
const everyCategory = (name: string, version = "0.1.0") =>
  [
    PluginCategory.MODEL,
    PluginCategory.TOOL,
    PluginCategory.CONTEXT,
    PluginCategory.MEMORY,
    PluginCategory.FRONTEND,
    PluginCategory.WIDGET,
  ].map((c) => id(c, name, version));

describe("providersNotNeeded", () => {
  const installed = new Map([
    ["anthropic", everyCategory("anthropic")],
    ["filesystem", everyCategory("filesystem")],
    ["search", everyCategory("search")],
    ["project-context", everyCategory("project-context")],
    ["tui", everyCategory("tui")],
  ]);

  it("keeps only the producers of recorded events that go through Render", () => {
    const recorded = [id(PluginCategory.KERNEL, "kernel"), id(PluginCategory.TOOL, "filesystem")];
    expect(providersNotNeeded(recorded, installed).sort()).toEqual([
      "anthropic",
      "project-context",
      "search",
      "tui",
    ]);
  });

  it("matches the exact category and version a session recorded", () => {
    const recorded = [
      id(PluginCategory.CONTEXT, "project-context"),
      id(PluginCategory.TOOL, "search", "0.0.9"), // another build: not this project's search
      id(PluginCategory.FRONTEND, "tui"), // frontends write no events the renderer asks them about
    ];
    expect(providersNotNeeded(recorded, installed).sort()).toEqual([
      "anthropic",
      "filesystem",
      "search",
      "tui",
    ]);
  });

  it("needs nothing for a session only the kernel wrote", () => {
    expect(providersNotNeeded([id(PluginCategory.KERNEL, "kernel")], installed)).toHaveLength(installed.size);
  });
});
