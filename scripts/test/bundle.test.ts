// The bundles scripts/bundle.ts builds, and when they count as up to date: a bundle runs
// as a real subprocess and still finds the files next to its sources; it goes stale when
// any input's content changes, stays fresh when an input is only touched, and is never
// used without an intact manifest and output.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundlePathFor, checkBundle, freshBundle, preferBundle } from "../../packages/runtime/src/bundles.ts";
import { buildBundle } from "../bundle.ts";

let root: string;
let entry: string;
let helper: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "ph-bundle-"));
  const pkg = join(root, "providers", "demo");
  mkdirSync(join(pkg, "src"), { recursive: true });
  writeFileSync(
    join(pkg, "package.json"),
    JSON.stringify({ name: "demo", version: "1.2.3", type: "module" }),
  );
  helper = join(pkg, "src", "helper.ts");
  writeFileSync(helper, 'export const greeting: string = "hello";\n');
  entry = join(pkg, "src", "main.ts");
  writeFileSync(
    entry,
    [
      'import { readFileSync } from "node:fs";',
      'import { greeting } from "./helper.ts";',
      'const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source text for the fixture file
      "console.log(`${greeting} ${pkg.version}`);",
      "",
    ].join("\n"),
  );
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("scripts/bundle.ts", () => {
  it("builds a bundle that runs on its own and still reads files next to its sources", async () => {
    const out = await buildBundle(entry, root);
    expect(out).toBe(bundlePathFor(entry, root));
    expect(out.startsWith(join(root, "dist", "bundles"))).toBe(true);
    expect(out.endsWith(".mjs")).toBe(true);
    const printed = execFileSync(process.execPath, [out], { encoding: "utf8" });
    expect(printed.trim()).toBe("hello 1.2.3");
    const manifest = JSON.parse(readFileSync(`${out}.json`, "utf8")) as { inputs: Record<string, unknown> };
    expect(Object.keys(manifest.inputs).sort()).toEqual([
      "providers/demo/package.json",
      "providers/demo/src/helper.ts",
      "providers/demo/src/main.ts",
    ]);
  });

  it("is fresh until an input's content changes; a touched but unchanged input keeps it fresh", async () => {
    await buildBundle(entry, root);
    expect(checkBundle(entry, root)?.path).toBe(bundlePathFor(entry, root));

    const later = new Date(Date.now() + 60_000);
    utimesSync(helper, later, later);
    expect(checkBundle(entry, root)).toBeDefined();

    writeFileSync(helper, 'export const greeting: string = "HELLO";\n');
    expect(checkBundle(entry, root)).toBeUndefined();
    expect(preferBundle(entry, root)).toBe(entry);

    await buildBundle(entry, root);
    expect(checkBundle(entry, root)).toBeDefined();
    expect(execFileSync(process.execPath, [bundlePathFor(entry, root)!], { encoding: "utf8" }).trim()).toBe(
      "HELLO 1.2.3",
    );
  });

  it("is never used without an intact manifest and output", async () => {
    const out = await buildBundle(entry, root);
    const manifest = readFileSync(`${out}.json`, "utf8");

    writeFileSync(out, `${readFileSync(out, "utf8")}\n// edited by hand\n`);
    expect(checkBundle(entry, root)).toBeUndefined();
    await buildBundle(entry, root);

    const tampered = JSON.parse(readFileSync(`${out}.json`, "utf8")) as { digest: string };
    tampered.digest = `sha256:${"0".repeat(64)}`;
    writeFileSync(`${out}.json`, JSON.stringify(tampered));
    expect(checkBundle(entry, root)).toBeUndefined();

    rmSync(`${out}.json`);
    expect(checkBundle(entry, root)).toBeUndefined();
    expect(manifest.length).toBeGreaterThan(0);

    rmSync(join(root, "dist"), { recursive: true, force: true });
    expect(checkBundle(entry, root)).toBeUndefined();
    expect(freshBundle(join(root, "elsewhere.ts"), join(root, "providers"))).toBeUndefined();
  });

  it("a release manifest (an installed package) checks the bundle only, never the sources", async () => {
    const out = await buildBundle(entry, root);
    const manifest = JSON.parse(readFileSync(`${out}.json`, "utf8")) as Record<string, unknown>;
    writeFileSync(`${out}.json`, JSON.stringify({ ...manifest, release: true }));
    rmSync(helper);
    expect(checkBundle(entry, root)?.path).toBe(out);
    // Without the flag the missing source makes it stale.
    writeFileSync(`${out}.json`, JSON.stringify(manifest));
    expect(checkBundle(entry, root)).toBeUndefined();
    // And the bundle itself is still checked.
    writeFileSync(`${out}.json`, JSON.stringify({ ...manifest, release: true }));
    writeFileSync(out, `${readFileSync(out, "utf8")}\n// edited\n`);
    expect(checkBundle(entry, root)).toBeUndefined();
    writeFileSync(helper, 'export const greeting: string = "hello";\n');
  });

  it("a bundle of this repository records scripts/bundle.ts as an input", () => {
    const repo = join(import.meta.dirname, "..", "..");
    const manifest = JSON.parse(
      readFileSync(`${bundlePathFor(join(repo, "providers", "task", "src", "main.ts"), repo)}.json`, "utf8"),
    ) as { inputs: Record<string, unknown> };
    expect(Object.keys(manifest.inputs)).toContain("scripts/bundle.ts");
  });

  it("places bundles under dist/bundles and nowhere outside the root", () => {
    expect(bundlePathFor(join(root, "packages", "cli", "src", "bin.ts"), root)).toBe(
      join(root, "dist", "bundles", "packages", "cli", "src", "bin.mjs"),
    );
    expect(bundlePathFor("/elsewhere/main.ts", root)).toBeUndefined();
  });
});
