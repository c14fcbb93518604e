// Every file in fixtures/invalid/ is a configuration that must be rejected. Line 1
// states the expected error ("# expect: <category> <line>:<col>"); an optional
// line 2 says which loader to run ("# mode: decode <schema>|global|lock|validate|resolve").

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type ConfigDiagnostic,
  decodeProviderConfig,
  loadConfigSource,
  parseGlobalConfig,
  parseLockFile,
  resolveProviders,
  validateAgainstProviders,
} from "../src/index.ts";
import { CANARY, FACTS, FIXTURES, INSTALL_ROOT, SCHEMAS, TEST_ENV } from "./helpers.ts";

const DIR = join(FIXTURES, "invalid");
const files = readdirSync(DIR)
  .filter((f) => f.endsWith(".hcl"))
  .sort();

function run(text: string, file: string, mode: string): ConfigDiagnostic[] {
  const [kind, arg] = mode.split(" ");
  if (kind === "global") {
    const r = parseGlobalConfig(text, file, TEST_ENV);
    return r.ok ? [] : r.diagnostics;
  }
  if (kind === "lock") {
    const r = parseLockFile(text, file);
    return r.ok ? [] : r.diagnostics;
  }
  const loaded = loadConfigSource(text, file, "/project");
  if (!loaded.ok) return loaded.diagnostics;
  const config = loaded.config;
  if (kind === "decode") {
    const r = decodeProviderConfig(config, "anthropic", SCHEMAS[arg!]!, TEST_ENV);
    return r.ok ? [] : r.diagnostics;
  }
  if (kind === "validate") return validateAgainstProviders(config, FACTS, TEST_ENV);
  if (kind === "resolve") return resolveProviders(config, { installationRoot: INSTALL_ROOT }).diagnostics;
  return [];
}

describe("invalid configuration corpus", () => {
  it("holds at least 40 configurations", () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
  });

  for (const name of files) {
    it(name, () => {
      const text = readFileSync(join(DIR, name), "utf8");
      const lines = text.split("\n");
      const m = /^# expect: ([a-z_]+) (\d+):(\d+)$/.exec(lines[0]!);
      expect(m, "line 1 must state the expectation").not.toBeNull();
      const [, category, line, column] = m!;
      const mode = /^# mode: (.+)$/.exec(lines[1] ?? "")?.[1] ?? "project";
      const diags = run(text, name, mode);
      const errors = diags.filter((d) => d.severity === "error");
      expect(errors.length, "the configuration must be rejected").toBeGreaterThan(0);
      const hit = errors.find(
        (d) => d.category === category && d.line === Number(line) && d.column === Number(column),
      );
      expect(
        hit,
        `expected ${category} at ${line}:${column}, got:\n${errors.map((d) => `${d.category} ${d.line}:${d.column} ${d.summary}: ${d.detail}`).join("\n")}`,
      ).toBeDefined();
      for (const d of diags) {
        expect(d.file).toBe(name);
        expect(d.summary.length).toBeGreaterThan(0);
        expect(`${d.summary} ${d.detail}`).not.toContain(CANARY);
      }
    });
  }
});
