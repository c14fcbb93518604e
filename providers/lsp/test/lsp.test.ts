// The lsp provider over the real plugin boundary, against the real TypeScript language
// server (typescript-language-server + typescript, this package's dependencies) on a small
// project with a type error: diagnostics for the touched files, go-to-definition and
// references; one server per session, reused, stopped with the plugin; a hanging server
// times out with a clear error and is killed.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runConformance, ToolHarness } from "@pluggableharness/conformance";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let dir: string;
let h: ToolHarness;

const MATH = `export function add(a: number, b: number): number {
  return a + b;
}

export const answer: number = add(40, 2);
`;
const MAIN_TS = `import { add } from "./math";

const total: number = add(1, 2);
const label: string = total;

console.log(label, add(3, 4));
`;

function project(): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), "ph-lsp-")));
  mkdirSync(join(d, "src"));
  writeFileSync(
    join(d, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "Bundler",
        strict: true,
        noEmit: true,
      },
      include: ["src"],
    }),
  );
  writeFileSync(join(d, "src", "math.ts"), MATH);
  writeFileSync(join(d, "src", "main.ts"), MAIN_TS);
  return d;
}

/** Language server processes (typescript-language-server or tsserver) whose cwd is `d`. */
function serversIn(d: string): number[] {
  const found: number[] = [];
  for (const name of require_proc()) {
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!/typescript-language-server|tsserver/.test(cmd)) continue;
      const environ = readFileSync(`/proc/${name}/stat`, "utf8");
      if (environ.includes(") Z")) continue;
      if (realpathSync(`/proc/${name}/cwd`) === d) found.push(Number(name));
    } catch {}
  }
  return found;
}

import { readdirSync } from "node:fs";

function require_proc(): string[] {
  return readdirSync("/proc").filter((n) => /^\d+$/.test(n));
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

beforeAll(async () => {
  dir = project();
  h = new ToolHarness({ executable: MAIN, name: "lsp" });
  await h.configure({ settle_ms: 300, deny_read: [join(dir, "secret")] });
}, 60_000);

afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const SESSION = "01LSPTEST00000000000000001";
const call = (tool: string, args: Record<string, unknown>, sessionId = SESSION) =>
  h.invoke(tool, args as never, { cwd: dir, sessionId });

describe("lsp against the real TypeScript language server", () => {
  it("reports the type error in the touched file, and none once it is fixed (same server, reused)", async () => {
    const first = await call("diagnostics", { paths: ["src/main.ts", "src/math.ts"] });
    expect(first.error).toBeUndefined();
    const res = first.result as {
      files: Array<{ path: string; diagnostics: Array<Record<string, unknown>> }>;
      errors: number;
      summary: string;
    };
    expect(res.errors).toBe(1);
    expect(res.files.map((f) => f.path)).toEqual(["src/main.ts", "src/math.ts"]);
    expect(res.files[0]!.diagnostics).toEqual([
      expect.objectContaining({ line: 4, column: 7, severity: "error", code: "2322", source: "typescript" }),
    ]);
    expect(String(res.files[0]!.diagnostics[0]!["message"])).toContain("not assignable to type 'string'");
    expect(res.files[1]!.diagnostics).toEqual([]);
    expect(res.summary).toMatch(
      /^src\/main\.ts:4:7 error TS2322: Type 'number' is not assignable to type 'string'\./,
    );
    const servers = serversIn(dir);
    expect(servers.length).toBeGreaterThan(0);

    // The edit fixes it; the same server sees the file as it is now.
    writeFileSync(
      join(dir, "src", "main.ts"),
      MAIN_TS.replace("const label: string = total;", "const label: string = String(total);"),
    );
    const fixed = (await call("diagnostics", { paths: ["src/main.ts"] })).result as {
      errors: number;
      summary: string;
    };
    expect(fixed.errors).toBe(0);
    expect(fixed.summary).toBe("No diagnostics in src/main.ts.");
    expect(serversIn(dir)).toEqual(servers);
    // A change in one file shows in another that depends on it.
    writeFileSync(join(dir, "src", "math.ts"), MATH.replace("b: number): number", "b: string): number"));
    const dependent = (await call("diagnostics", { paths: ["src/math.ts", "src/main.ts"] })).result as {
      files: Array<{ diagnostics: Array<Record<string, unknown>> }>;
    };
    expect(dependent.files[0]!.diagnostics.map((d) => d["code"])).toContain("2322"); // a + b is not a number
    expect(dependent.files[1]!.diagnostics.map((d) => d["code"])).toContain("2345"); // add(1, 2): 2 is not a string
    writeFileSync(join(dir, "src", "math.ts"), MATH);
    writeFileSync(join(dir, "src", "main.ts"), MAIN_TS);
  }, 60_000);

  it("goes to a definition and finds references across files", async () => {
    const def = (await call("definition", { path: "src/main.ts", line: 3, symbol: "add" })).result as {
      locations: Array<Record<string, unknown>>;
    };
    expect(def.locations).toEqual([
      expect.objectContaining({
        path: "src/math.ts",
        line: 1,
        column: 17,
        text: "export function add(a: number, b: number): number {",
      }),
    ]);
    const refs = (await call("references", { path: "src/math.ts", line: 1, column: 17 })).result as {
      locations: Array<Record<string, unknown>>;
      summary: string;
    };
    expect(refs.locations.map((l) => `${l["path"]}:${l["line"]}:${l["column"]}`).sort()).toEqual([
      "src/main.ts:1:10",
      "src/main.ts:3:23",
      "src/main.ts:6:20",
      "src/math.ts:1:17",
      "src/math.ts:5:31",
    ]);
    const noDecl = (
      await call("references", { path: "src/math.ts", line: 1, symbol: "add", include_declaration: false })
    ).result as { locations: unknown[] };
    expect(noDecl.locations).toHaveLength(4);
  }, 60_000);

  it("rejects files outside any configured language and missing files clearly", async () => {
    writeFileSync(join(dir, "notes.txt"), "hi");
    const txt = await call("diagnostics", { paths: ["notes.txt"] });
    expect(txt.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect(txt.error?.message).toContain("no language server is configured for .txt");
    const missing = await call("diagnostics", { paths: ["src/nope.ts"] });
    expect(missing.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    const empty = await call("diagnostics", { paths: [] });
    expect(empty.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
  });

  it("hands no language server a file in a credential store (deny_read), by any path", async () => {
    mkdirSync(join(dir, "secret"));
    writeFileSync(join(dir, "secret", "keys.ts"), 'export const key = "lsp-canary-4e1f";\n');
    symlinkSync(join(dir, "secret"), join(dir, "src", "via-link"));
    for (const p of ["secret/keys.ts", "src/via-link/keys.ts", join(dir, "secret", "keys.ts")]) {
      const r = await call("diagnostics", { paths: [p] });
      expect(r.error?.category, p).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(r.error?.message).toContain("allow_read in the lsp provider block");
      expect(JSON.stringify(r)).not.toContain("lsp-canary-4e1f");
    }
  });

  it("stops its servers when the plugin shuts down, and they exit if the plugin is killed", async () => {
    const d = project();
    try {
      const p = new ToolHarness({ executable: MAIN, name: "lsp-shutdown" });
      await p.configure({});
      await p.invoke("diagnostics", { paths: ["src/main.ts"] } as never, {
        cwd: d,
        sessionId: "01LSPSHUTDOWN0000000000001",
      });
      expect(serversIn(d).length).toBeGreaterThan(0);
      await p.close();
      expect(await until(() => serversIn(d).length === 0, 5_000)).toBe(true);

      const victim = new ToolHarness({ executable: MAIN, name: "lsp-victim" });
      await victim.configure({});
      await victim.invoke("diagnostics", { paths: ["src/main.ts"] } as never, {
        cwd: d,
        sessionId: "01LSPVICTIM000000000000001",
      });
      expect(serversIn(d).length).toBeGreaterThan(0);
      process.kill(victim.plugin.host.pid!, "SIGKILL");
      // The server sees its stdin close (and watches processId): it exits on its own.
      expect(await until(() => serversIn(d).length === 0, 10_000)).toBe(true);
      await victim.close();
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  }, 60_000);

  it("times out a server that never answers, with a clear error, and kills it", async () => {
    const hang = new ToolHarness({ executable: MAIN, name: "lsp-hang" });
    try {
      const script = join(dir, "hang.mjs");
      writeFileSync(script, "process.stdin.resume(); setInterval(() => {}, 1000);\n");
      await hang.configure({ servers: { typescript: `${process.execPath} ${script}` }, timeout_ms: 500 });
      const started = Date.now();
      const r = await hang.invoke("diagnostics", { paths: ["src/main.ts"] } as never, {
        cwd: dir,
        sessionId: SESSION,
      });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(r.error?.category).toBe(ToolErrorCategory.TIMEOUT);
      expect(r.error?.message).toBe(
        "the typescript language server did not answer initialize within 500 ms; it was stopped (the next call starts a new one)",
      );
      const hung = () =>
        require_proc().filter((n) => {
          try {
            return (
              readFileSync(`/proc/${n}/cmdline`, "utf8").includes(script) &&
              !readFileSync(`/proc/${n}/stat`, "utf8").includes(") Z")
            );
          } catch {
            return false;
          }
        });
      expect(await until(() => hung().length === 0, 3_000)).toBe(true);
    } finally {
      await hang.close();
    }
  });

  it("passes agent conform's tool-provider checks", async () => {
    const report = await runConformance({
      isolation: "process",
      executable: MAIN,
      workingDirectory: dir,
      samples: [
        { tool: "diagnostics", arguments: { paths: ["src/main.ts"] }, expect: "result" },
        { tool: "definition", arguments: { path: "src/main.ts", line: 3, symbol: "add" }, expect: "result" },
        { tool: "references", arguments: { path: "src/math.ts", line: 1, column: 17 }, expect: "result" },
        { tool: "diagnostics", arguments: { paths: ["nope.ts"] }, expect: "not_found" },
      ],
    });
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    expect(report.exitCode).toBe(0);
  }, 90_000);
});
