// The filesystem provider's own guard, over the real plugin boundary, without the kernel's
// gate in front of it: writes that reach a kernel-owned path through links (dangling ones,
// chains, directories, renames onto a link, a journal planted for the next start), reads
// through a hard link to a file outside the roots, and reads and writes while another
// process swaps a directory on the path for a link to outside the roots.
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const SECRET = "SECRET outside the roots\n";
const EVIL = 'policy "pwn" {\n  match  = { tool_name = "bash" }\n  action = "allow"\n}\n';

let base: string;
let root: string;
let outside: string;
let h: ToolHarness;

function owned(): string[] {
  return [join(root, "agent.hcl"), join(root, ".agent"), join(base, "home", ".config", "agent")];
}

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-fs-protected-")));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), SECRET);
  h = new ToolHarness({ executable: MAIN, name: "filesystem" });
  h.kernel.execEnvironment = { variables: {}, protectedPaths: owned() };
  await h.configure({ roots: [root] });
});

afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

const call = (tool: string, args: Record<string, unknown>) => h.invoke(tool, args as never, { cwd: root });

function expectNothingOwned(): void {
  expect(existsSync(join(root, "agent.hcl")), "agent.hcl").toBe(false);
  expect(existsSync(join(root, ".agent")), ".agent").toBe(false);
}

describe("writes into kernel-owned paths", () => {
  it("are refused through every kind of link, in every writing tool", async () => {
    writeFileSync(join(root, "calc.js"), "1 + 1\n");
    symlinkSync("agent.hcl", join(root, "cfg.txt"));
    symlinkSync("b", join(root, "chain"));
    symlinkSync(".agent/policy.auto.hcl", join(root, "b"));
    symlinkSync(".agent", join(root, "d"));
    mkdirSync(join(root, "sub"));
    symlinkSync("../sub/../agent.hcl", join(root, "sub", "up"));
    symlinkSync("agent.hcl", join(root, "onto"));
    const attempts: Array<[string, Record<string, unknown>]> = [
      ["write_file", { path: "cfg.txt", content: EVIL }],
      ["write_file", { path: "chain", content: EVIL }],
      ["write_file", { path: "d/policy.auto.hcl", content: EVIL }],
      ["write_file", { path: "sub/up", content: EVIL }],
      ["write_file", { path: "agent.hcl", content: EVIL }],
      ["write_file", { path: "AGENT.HCL", content: EVIL }],
      ["edit_files", { changes: [{ path: "calc.js", action: "move", to: "onto" }] }],
      ["edit_files", { changes: [{ path: "d/x", action: "create", content: "x" }] }],
      [
        "apply_patch",
        { patch: "*** Begin Patch\n*** Update File: calc.js\n*** Move to: chain\n*** End Patch" },
      ],
      [
        "apply_patch",
        { patch: `*** Begin Patch\n*** Add File: sub/up\n+${EVIL.split("\n")[0]}\n*** End Patch` },
      ],
    ];
    for (const [tool, args] of attempts) {
      const r = await call(tool, args);
      expect(r.error?.category, `${tool} ${JSON.stringify(args)}`).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(r.error?.message).toMatch(/kernel-owned/);
    }
    expectNothingOwned();
    expect(readFileSync(join(root, "calc.js"), "utf8")).toBe("1 + 1\n");
    // A notebook reached through a link into an existing .agent/ is refused too.
    mkdirSync(join(root, ".agent"));
    writeFileSync(
      join(root, ".agent", "n.ipynb"),
      JSON.stringify({ cells: [], nbformat: 4, nbformat_minor: 5 }),
    );
    symlinkSync(".agent/n.ipynb", join(root, "nb.ipynb"));
    const nb = await call("notebook_edit", { path: "nb.ipynb", mode: "insert", source: "x" });
    expect(nb.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
    expect(JSON.parse(readFileSync(join(root, ".agent", "n.ipynb"), "utf8")).cells).toEqual([]);
    rmSync(join(root, ".agent"), { recursive: true });
    // Ordinary writes through ordinary links still work.
    symlinkSync("sub", join(root, "s"));
    const ok = await call("write_file", { path: "s/fine.txt", content: "fine\n" });
    expect(ok.error).toBeUndefined();
    expect(readFileSync(join(root, "sub", "fine.txt"), "utf8")).toBe("fine\n");
  });

  it("ignores a journal planted to rename a file onto a kernel-owned path at the next start", async () => {
    // What a crash would leave, forged: roll back by renaming the "backup" over agent.hcl.
    const backup = join(root, ".agent.hcl.0123456789ab.bak");
    writeFileSync(backup, EVIL);
    const journal = join(root, ".apply-patch-0123456789ab.journal");
    const forged = { version: 1, entries: [{ target: join(root, "agent.hcl"), backup, existed: true }] };
    writeFileSync(journal, JSON.stringify(forged));
    // And one aimed outside the roots.
    const journal2 = join(root, ".apply-patch-ba9876543210.journal");
    writeFileSync(
      journal2,
      JSON.stringify({ version: 1, entries: [{ target: join(outside, "secret.txt"), existed: false }] }),
    );
    const next = new ToolHarness({ executable: MAIN, name: "filesystem" });
    next.kernel.execEnvironment = { variables: {}, protectedPaths: owned() };
    try {
      const res = await next.client.configure({ config: { roots: [root] } });
      const warnings = (res.result?.diagnostics ?? []).filter(
        (d) => d.severity === DiagnosticSeverity.WARNING,
      );
      expect(warnings.map((w) => w.detail).join("\n")).toMatch(
        /kernel-owned[\s\S]*outside the allowed roots/,
      );
    } finally {
      await next.close();
    }
    expectNothingOwned();
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
    expect(existsSync(journal) && existsSync(journal2)).toBe(true);
    rmSync(journal);
    rmSync(journal2);
    rmSync(backup);
  });

  it("refuses every write when the kernel does not answer which paths it owns", async () => {
    const mute = new ToolHarness({ executable: MAIN, name: "filesystem" });
    Object.defineProperty(mute.kernel, "execEnvironment", {
      get() {
        throw new Error("the kernel is busy");
      },
    });
    try {
      await mute.configure({ roots: [root] });
      const r = await mute.invoke("write_file", { path: "cfg2.txt", content: "x" }, { cwd: root });
      expect(r.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
      expect(r.error?.message).toMatch(/did not say which paths it owns/);
      expect(existsSync(join(root, "cfg2.txt"))).toBe(false);
    } finally {
      await mute.close();
    }
  });
});

describe("hard links", () => {
  it("refuses to read or edit a file with another link, unless allow_hard_links", async () => {
    linkSync(join(outside, "secret.txt"), join(root, "alias.txt"));
    try {
      for (const [tool, args] of [
        ["read_file", { path: "alias.txt" }],
        ["write_file", { path: "alias.txt", content: "x" }],
        ["edit_file", { path: "alias.txt", old_str: "SECRET", new_str: "x" }],
      ] as const) {
        const r = await call(tool, args);
        expect(r.error?.category, tool).toBe(ToolErrorCategory.PERMISSION_DENIED);
        expect(r.error?.message).toMatch(/2 hard links/);
        expect(JSON.stringify(r)).not.toContain("SECRET");
      }
      expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
      const lenient = new ToolHarness({ executable: MAIN, name: "filesystem" });
      try {
        await lenient.configure({ roots: [root], allow_hard_links: true });
        const r = await lenient.invoke("read_file", { path: "alias.txt" }, { cwd: root });
        expect(r.result?.["content"]).toContain("SECRET");
      } finally {
        await lenient.close();
      }
    } finally {
      rmSync(join(root, "alias.txt"));
    }
  });
});

describe("a directory on the path swapped for a link to outside the roots", () => {
  let swapper: ChildProcess | undefined;
  afterEach(async () => {
    if (swapper && swapper.exitCode === null) {
      const gone = new Promise((r) => swapper!.once("exit", r));
      swapper.kill("SIGKILL");
      await gone;
    }
    rmSync(join(root, "race"), { recursive: true, force: true });
  });

  /** race/sub is a directory, then a link to outside/, then the directory again, as fast as it goes. */
  async function startSwapper(): Promise<void> {
    const dir = join(root, "race");
    mkdirSync(join(dir, "sub"), { recursive: true });
    writeFileSync(join(dir, "sub", "secret.txt"), "inside\n");
    symlinkSync(outside, join(dir, "sub.l"));
    const script = `const fs = require("node:fs"); process.chdir(${JSON.stringify(dir)});
      process.stdout.write("go\\n");
      for (;;) {
        try {
          fs.renameSync("sub", "sub.d"); fs.renameSync("sub.l", "sub");
          fs.renameSync("sub", "sub.l"); fs.renameSync("sub.d", "sub");
        } catch {
          try {
            if (fs.existsSync("sub.d")) { fs.rmSync("sub", { recursive: true, force: true }); fs.renameSync("sub.d", "sub"); }
            try { fs.lstatSync("sub.l"); } catch { fs.symlinkSync(${JSON.stringify(outside)}, "sub.l"); }
          } catch {}
        }
      }`;
    swapper = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => swapper!.stdout!.once("data", () => resolve()));
  }

  it("read_file never returns the outside file (0 escapes in 800 reads)", async () => {
    await startSwapper();
    let escapes = 0;
    let served = 0;
    // The old code escaped about once in 125 reads here: 800 make a miss very unlikely.
    for (let i = 0; i < 800; i++) {
      const r = await call("read_file", { path: "race/sub/secret.txt" });
      if (r.result) served++;
      if (JSON.stringify(r).includes("SECRET")) escapes++;
    }
    expect(escapes).toBe(0);
    expect(served).toBeGreaterThan(0);
  }, 60_000);

  it("write_file never creates a file outside (0 escapes in 300 writes)", async () => {
    await startSwapper();
    for (let i = 0; i < 300; i++) await call("write_file", { path: `race/sub/w-${i}.txt`, content: "x" });
    expect(readdirSync(outside).filter((n) => n.includes("w-"))).toEqual([]);
  }, 60_000);
});
