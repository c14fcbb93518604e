// Provider resolution against a fixture installation, and the lock file:
// version pre-check, deterministic writing, round trip, mismatch detection.

import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { evaluate, parseFile } from "@pluggableharness/hcl";
import { afterAll, describe, expect, it } from "vitest";
import {
  ANY_PLATFORM,
  firstPartyChecksum,
  type LockFile,
  loadConfigSource,
  packageChecksum,
  parseLockFile,
  platformKey,
  readLockFile,
  renderLockFile,
  resolveProviders,
  updateLock,
  verifyLock,
  writeLockFile,
} from "../src/index.ts";
import { INSTALL_ROOT } from "./helpers.ts";

const tmp = mkdtempSync(join(tmpdir(), "ph-config-lock-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CONFIG = `required_providers {
  filesystem = {
    source  = "github.com/pluggableharness/provider-filesystem"
    version = "~> 0.3"
  }
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0, < 1.0"
  }
  mine = {
    source  = "github.com/me/provider-mine"
    version = ">= 0"
  }
}
`;

function config() {
  const r = loadConfigSource(CONFIG, "agent.hcl", "/p");
  if (!r.ok) throw new Error("load failed");
  return r.config;
}

describe("provider resolution", () => {
  it("resolves first-party sources (both forms) to the installation and dev overrides to their path", () => {
    const override = join(tmp, "provider-mine");
    writeFileSync(override, "#!/bin/sh\n");
    const r = resolveProviders(config(), {
      installationRoot: INSTALL_ROOT,
      devOverrides: { mine: override },
    });
    expect(r.diagnostics).toEqual([]);
    expect(r.providers.map((p) => [p.localName, p.origin, p.version])).toEqual([
      ["filesystem", "first_party", "0.3.1"],
      ["anthropic", "first_party", "0.1.0"],
      ["mine", "dev_override", undefined],
    ]);
    const fs = r.providers[0]!;
    expect(fs.executable).toBe(join(INSTALL_ROOT, "providers", "filesystem", "src", "main.ts"));
    expect(fs.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.providers[2]!.executable).toBe(override);
    expect(r.providers[2]!.checksum).toBeUndefined();
  });

  it("a forge source the install step has not installed says how to install it", () => {
    const r = resolveProviders(config(), { installationRoot: INSTALL_ROOT });
    expect(r.diagnostics).toHaveLength(1);
    const d = r.diagnostics[0]!;
    expect(d.category).toBe("provider_install");
    expect(d.detail).toContain('"github.com/me/provider-mine" comes from a git forge');
    expect(d.detail).toContain("agent providers lock");
    expect([d.line, d.column]).toEqual([10, 3]);
  });

  it("names the unresolvable source and the supported forms", () => {
    const r0 = loadConfigSource(
      CONFIG.replace("github.com/me/provider-mine", "pluggableharness/mine"),
      "agent.hcl",
      "/p",
    );
    if (!r0.ok) throw new Error("load failed");
    const r = resolveProviders(r0.config, { installationRoot: INSTALL_ROOT });
    expect(r.diagnostics).toHaveLength(1);
    const d = r.diagnostics[0]!;
    expect(d.category).toBe("source_address");
    expect(d.detail).toContain('"pluggableharness/mine"');
    expect(d.detail).toContain("github.com/pluggableharness/provider-<name>");
    expect(d.detail).toContain("pluggableharness/<name>");
    expect(d.detail).toContain('"github.com/<owner>/<repo>" or "gitlab.com/<group>/<repo>"');
    expect(d.detail).toContain("dev_overrides");
    expect([d.line, d.column]).toEqual([10, 3]);
  });

  it("reports a dev override pointing nowhere", () => {
    const r = resolveProviders(config(), {
      installationRoot: INSTALL_ROOT,
      devOverrides: { mine: join(tmp, "missing") },
    });
    expect(r.diagnostics.map((d) => d.category)).toEqual(["io"]);
  });
});

describe("package checksum", () => {
  it("hashes paths and contents, ignores node_modules, and changes with any file", () => {
    const dir = join(tmp, "pkg");
    cpSync(join(INSTALL_ROOT, "providers", "filesystem"), dir, { recursive: true });
    const base = packageChecksum(dir);
    expect(base).toBe(packageChecksum(join(INSTALL_ROOT, "providers", "filesystem")));
    mkdirSync(join(dir, "node_modules", "dep"), { recursive: true });
    writeFileSync(join(dir, "node_modules", "dep", "index.js"), "x");
    expect(packageChecksum(dir)).toBe(base);
    writeFileSync(join(dir, "src", "main.ts"), "// changed\n");
    const changed = packageChecksum(dir);
    expect(changed).not.toBe(base);
    writeFileSync(join(dir, "src", "extra.ts"), "");
    expect(packageChecksum(dir)).not.toBe(changed);
  });
});

describe("first-party checksum", () => {
  it("covers what ships (package.json, README.md, src/) and nothing a clone has besides", () => {
    const dir = join(tmp, "shipped");
    cpSync(join(INSTALL_ROOT, "providers", "filesystem"), dir, { recursive: true });
    const base = firstPartyChecksum(dir);
    // Tests, fixtures and notes exist only in a clone: a lock must not depend on them.
    mkdirSync(join(dir, "test", "fixtures"), { recursive: true });
    writeFileSync(join(dir, "test", "fixtures", "x.txt"), "only in the clone");
    writeFileSync(join(dir, "tsconfig.json"), "{}");
    expect(firstPartyChecksum(dir)).toBe(base);
    expect(packageChecksum(dir)).not.toBe(packageChecksum(join(INSTALL_ROOT, "providers", "filesystem")));
    writeFileSync(join(dir, "src", "main.ts"), "// changed\n");
    expect(firstPartyChecksum(dir)).not.toBe(base);
  });
});

describe("lock file", () => {
  const resolved = () =>
    resolveProviders(config(), { installationRoot: INSTALL_ROOT, devOverrides: { mine: INSTALL_ROOT } })
      .providers;
  const now = new Date("2026-07-22T18:04:00.123Z");

  it("records first-party providers only, with exact version, time and checksum", () => {
    const lock = updateLock(undefined, resolved(), now);
    expect(lock.providers.map((e) => [e.name, e.version, e.resolved_at, Object.keys(e.checksums)])).toEqual([
      ["filesystem", "0.3.1", "2026-07-22T18:04:00Z", [ANY_PLATFORM]],
      ["anthropic", "0.1.0", "2026-07-22T18:04:00Z", [ANY_PLATFORM]],
    ]);
  });

  it("writes deterministically and reads back what it wrote", () => {
    const lock = updateLock(undefined, resolved(), now);
    const text = renderLockFile(lock);
    expect(renderLockFile({ providers: [...lock.providers].reverse() })).toBe(text);
    expect(text.indexOf("lock_file_version = 1")).toBeLessThan(text.indexOf('provider "anthropic"'));
    expect(text.indexOf('provider "anthropic"')).toBeLessThan(text.indexOf('provider "filesystem"'));
    const back = parseLockFile(text, "agent.lock.hcl");
    expect(back.ok).toBe(true);
    if (!back.ok || back.lock === undefined) return;
    const strip = (l: LockFile) =>
      l.providers.map(({ range: _r, ...e }) => e).sort((a, b) => a.name.localeCompare(b.name));
    expect(strip(back.lock)).toEqual(strip(lock));
    expect(renderLockFile(back.lock)).toBe(text);
    // The writer's output is plain HCL whose values evaluate to what was written.
    const parsed = parseFile(text, "x");
    expect(parsed.diagnostics).toEqual([]);
  });

  it("round-trips through the project directory", () => {
    const dir = join(tmp, "project");
    mkdirSync(dir);
    expect(readLockFile(dir)).toEqual({ ok: true, lock: undefined });
    const lock = updateLock(undefined, resolved(), now);
    const file = writeLockFile(dir, lock);
    expect(file).toBe(join(dir, ".agent", "agent.lock.hcl"));
    const r = readLockFile(dir);
    expect(r.ok && r.lock?.providers.length).toBe(2);
    if (r.ok && r.lock) expect(verifyLock(r.lock, resolved())).toEqual([]);
  });

  it("keeps resolved_at for unchanged entries and refreshes changed ones", () => {
    const first = updateLock(undefined, resolved(), now);
    const later = new Date("2027-01-01T00:00:00Z");
    expect(updateLock(first, resolved(), later).providers.map((e) => e.resolved_at)).toEqual([
      "2026-07-22T18:04:00Z",
      "2026-07-22T18:04:00Z",
    ]);
    const tampered: LockFile = {
      providers: first.providers.map((e) => (e.name === "anthropic" ? { ...e, version: "0.0.9" } : e)),
    };
    expect(updateLock(tampered, resolved(), later).providers.map((e) => e.resolved_at)).toEqual([
      "2026-07-22T18:04:00Z",
      "2027-01-01T00:00:00Z",
    ]);
  });

  it("reports a checksum mismatch naming the provider, at its lock entry", () => {
    const text = renderLockFile(updateLock(undefined, resolved(), now)).replace(
      /("any" = "sha256:)[0-9a-f]{64}(")(?=[\s\S]*provider "filesystem")/,
      `$1${"0".repeat(64)}$2`,
    );
    const lock = parseLockFile(text, "agent.lock.hcl");
    if (!lock.ok || !lock.lock) throw new Error("parse failed");
    const ds = verifyLock(lock.lock, resolved());
    expect(ds).toHaveLength(1);
    expect(ds[0]!.category).toBe("lock_mismatch");
    expect(ds[0]!.summary).toBe('Checksum mismatch for provider "anthropic"');
    const line = text.split("\n").findIndex((l) => l.startsWith('provider "anthropic"')) + 1;
    expect([ds[0]!.line, ds[0]!.column]).toEqual([line, 10]);
  });

  it("reports version, source and platform mismatches", () => {
    const base = updateLock(undefined, resolved(), now);
    const edit = (f: (e: LockFile["providers"][number]) => LockFile["providers"][number]) => ({
      providers: base.providers.map((e) => (e.name === "filesystem" ? f(e) : e)),
    });
    const v = verifyLock(
      edit((e) => ({ ...e, version: "0.3.0" })),
      resolved(),
    );
    expect(v.map((d) => [d.category, d.detail.includes("0.3.0")])).toEqual([["lock_mismatch", true]]);
    const s = verifyLock(
      edit((e) => ({ ...e, source: "pluggableharness/filesystem" })),
      resolved(),
    );
    expect(s[0]!.detail).toContain("source");
    const p = verifyLock(
      edit((e) => ({ ...e, checksums: { windows_arm64: e.checksums[ANY_PLATFORM]! } })),
      resolved(),
      "linux_amd64",
    );
    expect(p[0]!.summary).toContain("No locked checksum");
    const platformFirst = verifyLock(
      edit((e) => ({
        ...e,
        checksums: { [ANY_PLATFORM]: e.checksums[ANY_PLATFORM]!, linux_amd64: `sha256:${"1".repeat(64)}` },
      })),
      resolved(),
      "linux_amd64",
    );
    expect(platformFirst[0]!.summary).toContain("Checksum mismatch");
  });

  it("refuses a newer format before looking at anything else", () => {
    const r = parseLockFile("lock_file_version = 7\n\nthis is { not hcl at all\n", "agent.lock.hcl");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]!.summary).toBe("Lock file is newer than this agent");
    expect([r.diagnostics[0]!.line, r.diagnostics[0]!.column]).toEqual([1, 21]);
  });

  it("reads the worked lock file of configuration/examples.md", () => {
    const text = readFileSync(new URL("./fixtures/valid/examples-lock.hcl", import.meta.url), "utf8");
    const r = parseLockFile(text, "agent.lock.hcl");
    expect(r.ok).toBe(true);
    if (!r.ok || !r.lock) return;
    expect(r.lock.providers.map((e) => [e.name, e.version, Object.keys(e.checksums).length])).toEqual([
      ["anthropic", "1.2.4", 4],
      ["filesystem", "1.0.2", 4],
    ]);
  });

  it("maps the node platform to Go-style keys", () => {
    expect(platformKey("linux", "x64")).toBe("linux_amd64");
    expect(platformKey("darwin", "arm64")).toBe("darwin_arm64");
    expect(platformKey("win32", "ia32")).toBe("windows_386");
  });

  it("evaluates written values back to the same strings", () => {
    const lock = updateLock(undefined, resolved(), now);
    const parsed = parseFile(renderLockFile(lock), "x");
    const block = parsed.file.body.items.find((i) => i.kind === "Block");
    if (block?.kind !== "Block") throw new Error("no block");
    const checksums = block.body.items.find((i) => i.kind === "Attribute" && i.name === "checksums");
    if (checksums?.kind !== "Attribute") throw new Error("no checksums");
    expect(evaluate(checksums.expr).value).toEqual(
      lock.providers.find((e) => e.name === "anthropic")!.checksums,
    );
  });
});
