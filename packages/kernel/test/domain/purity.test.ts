// The domain core is pure: no IO modules, no clock, no randomness, no process state, and
// it never reads provider_options (a field the kernel reads must be typed, not passed through).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = join(import.meta.dirname, "../../src/domain");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
const ALLOWED_IMPORTS = [
  /^\.\/[\w-]+\.ts$/,
  /^@bufbuild\/protobuf(\/wkt)?$/,
  /^@pluggableharness\/protocol\/(tool|model|content|common|schema|slashcommand|event|render)$/,
  // protocol's hand-written tables over its generated enums: they import nothing else.
  /^@pluggableharness\/protocol\/(schema-type-names|status-codes)$/,
  /^ajv$/,
  /^ulid$/,
];
const FORBIDDEN_CODE = [
  /Date\.now\(/,
  /new Date\(\)/,
  /Math\.random\(/,
  /\bprocess\./,
  /setTimeout\(/,
  /setInterval\(/,
  /console\./,
  /providerOptions/,
];

describe("purity of src/domain", () => {
  it("the domain core imports no IO module", () => {
    expect(files.length).toBeGreaterThan(10);
    const bad: string[] = [];
    for (const f of files) {
      const src = readFileSync(join(dir, f), "utf8");
      for (const m of src.matchAll(
        /\bfrom\s+"([^"]+)"|\bimport\s*\(\s*"([^"]+)"\s*\)|\brequire\(\s*"([^"]+)"/g,
      )) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        if (!ALLOWED_IMPORTS.some((re) => re.test(spec))) bad.push(`${f}: ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("the domain core reads no clock, randomness or process state, and never provider_options", () => {
    const bad: string[] = [];
    for (const f of files) {
      const src = readFileSync(join(dir, f), "utf8");
      for (const re of FORBIDDEN_CODE) if (re.test(src)) bad.push(`${f}: ${re}`);
    }
    expect(bad).toEqual([]);
  });
});
