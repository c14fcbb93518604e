// The built-in configuration confines the file and search tools to the project: both
// providers require `roots`, so without them a zero-config session could not start.
import { describe, expect, it } from "vitest";
import { decodeProviderConfig, defaultConfig } from "../src/index.ts";

const ROOTS_SCHEMA = {
  attributes: [{ name: "roots", type: 4, required: true, sensitive: false, objectAttributes: [] }],
};

describe("zero-config tool roots", () => {
  it("gives filesystem and search the project directory as their only root", () => {
    const r = defaultConfig({ ANTHROPIC_API_KEY: "a" }, "/home/me/project");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    for (const name of ["filesystem", "search"]) {
      const d = decodeProviderConfig(r.config, name, ROOTS_SCHEMA, {});
      if (!d.ok) throw new Error(JSON.stringify(d.diagnostics));
      expect(d.config.values).toEqual({ roots: ["/home/me/project"] });
    }
    // No repository and no language server at a directory that does not exist: no git, no lsp.
    expect(r.config.providers.map((p) => p.name)).toEqual(["anthropic", "filesystem", "search", "agent"]);
  });
});
