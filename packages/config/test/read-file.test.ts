import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadGlobalConfig } from "../src/global.ts";
import { loadProjectConfig } from "../src/load.ts";
import { readConfigFile } from "../src/read-file.ts";

describe("readConfigFile", () => {
  it("returns the bytes of a readable file", () => {
    const dir = mkdtempSync(join(tmpdir(), "read-file-"));
    writeFileSync(join(dir, "a.hcl"), "x = 1\n");
    const r = readConfigFile(join(dir, "a.hcl"), "Cannot read configuration");
    expect(r.ok && Buffer.from(r.bytes).toString()).toBe("x = 1\n");
  });

  it("turns a read failure into one io diagnostic naming the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "read-file-"));
    const r = readConfigFile(dir, "Cannot read configuration");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]).toMatchObject({
      severity: "error",
      category: "io",
      file: dir,
      line: 1,
      column: 1,
      summary: "Cannot read configuration",
    });
    expect(r.diagnostics[0]?.detail).toMatch(/EISDIR/);
  });

  it("is what the project and global loaders report for an unreadable file", () => {
    const project = mkdtempSync(join(tmpdir(), "read-file-"));
    // agent.hcl as a directory: it exists, but reading it fails.
    const agentHcl = join(project, "agent.hcl");
    mkdirSync(agentHcl);
    const p = loadProjectConfig(project, { env: {} });
    expect(p.ok).toBe(false);
    if (!p.ok)
      expect(p.diagnostics[0]).toMatchObject({
        category: "io",
        summary: "Cannot read configuration",
        file: agentHcl,
      });
    const g = loadGlobalConfig({ path: project, env: {} });
    expect(g.ok).toBe(false);
    if (!g.ok)
      expect(g.diagnostics[0]).toMatchObject({
        category: "io",
        summary: "Cannot read the global configuration",
      });
  });
});
