// How each provider runs, as far as configuration decides it: `isolation` in its
// required_providers entry, the package's own default, and the rule that only installed
// first-party providers may run in a worker. The kernel's default for the rest (and the
// plugin sandbox's veto) is tested in packages/kernel/test/plugins/transport-choice.test.ts.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { formatDiagnostic, loadConfigSource, resolveProviders } from "../src/index.ts";
import { INSTALL_ROOT } from "./helpers.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function resolve(
  hcl: string,
  options: { installationRoot?: string; devOverrides?: Record<string, string> } = {},
) {
  const loaded = loadConfigSource(hcl, "/project/agent.hcl", "/project");
  if (!loaded.ok) throw new Error(loaded.diagnostics.map(formatDiagnostic).join("\n"));
  return resolveProviders(loaded.config, { installationRoot: INSTALL_ROOT, ...options });
}

const entry = (name: string, extra = "") =>
  `  ${name} = { source = "pluggableharness/${name}", version = ">= 0.0.0"${extra} }\n`;

describe("provider isolation", () => {
  it("records what agent.hcl asks for and leaves the rest to the kernel's default", () => {
    const r = resolve(
      `required_providers {\n${entry("anthropic")}${entry("filesystem", ', isolation = "process"')}}\n`,
    );
    expect(r.diagnostics).toEqual([]);
    expect(Object.fromEntries(r.providers.map((p) => [p.localName, p.isolation]))).toEqual({
      anthropic: undefined,
      filesystem: "process",
    });
  });

  it("honours a package that declares it must run as a process", () => {
    const root = mkdtempSync(join(tmpdir(), "ph-isolation-"));
    dirs.push(root);
    cpSync(INSTALL_ROOT, root, { recursive: true });
    const manifest = join(root, "providers", "filesystem", "package.json");
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as Record<string, unknown>;
    writeFileSync(manifest, JSON.stringify({ ...pkg, pluggableharness: { isolation: "process" } }));
    const r = resolve(`required_providers {\n${entry("filesystem")}${entry("anthropic")}}\n`, {
      installationRoot: root,
    });
    expect(r.providers.find((p) => p.localName === "filesystem")?.isolation).toBe("process");
    expect(r.providers.find((p) => p.localName === "anthropic")?.isolation).toBeUndefined();
    // agent.hcl still wins over the package's default.
    const asked = resolve(`required_providers {\n${entry("filesystem", ', isolation = "worker"')}}\n`, {
      installationRoot: root,
    });
    expect(asked.providers[0]?.isolation).toBe("worker");
  });

  it("always runs a dev override as a process, and refuses a worker for one at the isolation attribute", () => {
    const exe = join(INSTALL_ROOT, "providers", "filesystem", "src", "main.ts");
    const plain = resolve(`required_providers {\n${entry("filesystem")}}\n`, {
      devOverrides: { filesystem: exe },
    });
    expect(plain.providers[0]).toMatchObject({ origin: "dev_override", isolation: "process" });
    const refused = resolve(
      `required_providers {\n  filesystem = {\n    source    = "pluggableharness/filesystem"\n    version   = ">= 0.0.0"\n    isolation = "worker"\n  }\n}\n`,
      { devOverrides: { filesystem: exe } },
    );
    expect(refused.providers).toEqual([]);
    expect(refused.diagnostics.map(formatDiagnostic)).toEqual([
      expect.stringMatching(
        /^\/project\/agent\.hcl:5:17: error\[invalid_value\]: Isolation not allowed: .*always runs as its own process/,
      ),
    ]);
  });
});
