// The jail against a symbolic link swapped in while it works (issue 31: about 1 read in
// 100 went through a link swapped mid-call). Another process swaps, as fast as it can, a
// directory (or the file itself) on the path with a link to a directory outside the
// roots. Each test first runs the old way of doing the same thing (check the path, then
// open it by name again) until it escapes, which shows the swapping is live, then runs
// the jail's way and counts escapes: there must be none.
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
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Jail, type ResolvedPath } from "../src/jail.ts";

const SECRET = "SECRET outside the roots\n";
/** Tries of the jail's way: every one must stay inside. */
const TRIES = 400;
/** Most tries of the old way before giving up on seeing it escape (it escapes far sooner). */
const CONTROL_TRIES = 5_000;

let base: string;
let root: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-jail-race-")));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "sub", "a.txt"), "inside\n");
  writeFileSync(join(outside, "a.txt"), SECRET);
});

afterEach(async () => {
  if (swapper && swapper.exitCode === null) {
    const gone = new Promise((r) => swapper!.once("exit", r));
    swapper.kill("SIGKILL");
    await gone;
  }
  swapper = undefined;
  rmSync(base, { recursive: true, force: true });
});

/**
 * Starts a process that keeps running `body` (sync steps over `fs`, in `dir`); when a step
 * fails, `repair` puts things back in order (a write may have created `sub` while it was
 * away).
 */
async function startSwapper(dir: string, body: string, repair = ""): Promise<void> {
  const script = `const fs = require("node:fs"); process.chdir(${JSON.stringify(dir)});
    process.stdout.write("go\\n");
    for (;;) { try { ${body} } catch { try { ${repair} } catch {} } }`;
  swapper = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    swapper!.stdout!.once("data", () => resolve());
    swapper!.once("exit", (code) => reject(new Error(`the swapper exited (${code})`)));
  });
}

/** `sub` is a directory, then a link to the outside directory, then the directory again. */
const SWAP_DIRECTORY = `
  fs.renameSync("sub", "sub.d"); fs.renameSync("sub.l", "sub");
  fs.renameSync("sub", "sub.l"); fs.renameSync("sub.d", "sub");`;
/** Back to: `sub` the directory, `sub.l` the link (a `sub` made meanwhile is removed). */
const REPAIR = (outsideDir: string) => `
  if (fs.existsSync("sub.d")) { fs.rmSync("sub", { recursive: true, force: true }); fs.renameSync("sub.d", "sub"); }
  try { fs.lstatSync("sub.l"); } catch { fs.symlinkSync(${JSON.stringify(outsideDir)}, "sub.l"); }`;

/** Runs `attempt` until it returns true (escaped) or `max` tries; returns the tries used. */
async function untilEscape(max: number, attempt: () => Promise<boolean>): Promise<number> {
  for (let i = 1; i <= max; i++) if (await attempt()) return i;
  return Number.POSITIVE_INFINITY;
}

async function resolved(jail: Jail, path: string): Promise<ResolvedPath | undefined> {
  try {
    const f = await jail.resolve(path, root);
    return f.exists ? f : undefined;
  } catch {
    return undefined; // refused while the link was in place: not an escape
  }
}

describe("reads while a link is swapped in", () => {
  it("never read outside through a swapped directory", async () => {
    symlinkSync(outside, join(root, "sub.l"));
    await startSwapper(root, SWAP_DIRECTORY, REPAIR(outside));
    const jail = await Jail.create([root]);
    // The old way: resolve, then read the path by name.
    const oldWay = await untilEscape(CONTROL_TRIES, async () => {
      const f = await resolved(jail, "sub/a.txt");
      return f !== undefined && (await readFile(f.real, "utf8").catch(() => "")) === SECRET;
    });
    expect(oldWay, "the old way never escaped: the swapping is not live").toBeLessThan(CONTROL_TRIES);
    let escapes = 0;
    let reads = 0;
    for (let i = 0; i < TRIES; i++) {
      const f = await resolved(jail, "sub/a.txt");
      if (!f) continue;
      try {
        const { handle } = await jail.openForRead(f);
        try {
          reads++;
          if ((await handle.readFile("utf8")) === SECRET) escapes++;
        } finally {
          await handle.close();
        }
      } catch {
        // refused: the path changed under it
      }
    }
    expect(escapes).toBe(0);
    expect(reads).toBeGreaterThan(0);
  }, 60_000);

  it("never read outside through a file swapped for a link", async () => {
    writeFileSync(join(root, "a.txt"), "inside\n");
    await startSwapper(
      root,
      `try { fs.unlinkSync("l.tmp"); } catch {}
       fs.symlinkSync(${JSON.stringify(join(outside, "a.txt"))}, "l.tmp"); fs.renameSync("l.tmp", "a.txt");
       fs.writeFileSync("f.tmp", "inside\\n"); fs.renameSync("f.tmp", "a.txt");`,
    );
    const jail = await Jail.create([root]);
    const oldWay = await untilEscape(CONTROL_TRIES, async () => {
      const f = await resolved(jail, "a.txt");
      return f !== undefined && (await readFile(f.real, "utf8").catch(() => "")) === SECRET;
    });
    expect(oldWay, "the old way never escaped: the swapping is not live").toBeLessThan(CONTROL_TRIES);
    let escapes = 0;
    for (let i = 0; i < TRIES; i++) {
      const f = await resolved(jail, "a.txt");
      if (!f) continue;
      try {
        const { handle } = await jail.openForRead(f);
        try {
          if ((await handle.readFile("utf8")) === SECRET) escapes++;
        } finally {
          await handle.close();
        }
      } catch {
        // refused
      }
    }
    expect(escapes).toBe(0);
  }, 60_000);
});

describe("writes while a link is swapped in", () => {
  it("never create a file outside through a swapped directory", async () => {
    symlinkSync(outside, join(root, "sub.l"));
    await startSwapper(root, SWAP_DIRECTORY, REPAIR(outside));
    const jail = await Jail.create([root]);
    const written = () => readdirSync(outside).filter((n) => n.includes("w-"));
    // The old way: resolve, then create a temporary file by name and rename it over the target.
    let n = 0;
    const oldWay = await untilEscape(CONTROL_TRIES, async () => {
      const target = await jail.resolve(`sub/w-old-${n++}.txt`, root).catch(() => undefined);
      if (!target) return false;
      try {
        await mkdir(dirname(target.real), { recursive: true });
        const h = await open(`${target.real}.tmp`, "wx");
        await h.close();
        await rename(`${target.real}.tmp`, target.real);
      } catch {
        // the swap got in the way
      }
      return written().length > 0;
    });
    expect(oldWay, "the old way never escaped: the swapping is not live").toBeLessThan(CONTROL_TRIES);
    for (const name of written()) rmSync(join(outside, name));
    for (let i = 0; i < TRIES; i++) {
      const f = await jail.resolve(`sub/w-${i}.txt`, root).catch(() => undefined);
      if (!f) continue;
      await jail.writeFileAtomic(f, "x", undefined).catch(() => {});
    }
    expect(written()).toEqual([]);
  }, 60_000);
});

describe("hard links", () => {
  it("refuses to read a file with more than one link, unless allowed", async () => {
    linkSync(join(outside, "a.txt"), join(root, "alias.txt"));
    const jail = await Jail.create([root]);
    const f = await jail.resolve("alias.txt", root);
    await expect(jail.openForRead(f)).rejects.toMatchObject({
      category: "permission_denied",
      message: expect.stringMatching(/has 2 hard links.*allow_hard_links/),
    });
    expect(() => jail.openForReadSync(f.real)).toThrow(/hard links/);
    const lenient = await Jail.create([root], { allowHardLinks: true });
    const { handle } = await lenient.openForRead(f);
    expect(await handle.readFile("utf8")).toBe(SECRET);
    await handle.close();
  });
});

describe("protected paths", () => {
  it("refuses writes that reach a protected path through any link, and creates nothing", async () => {
    const jail = await Jail.create([root], {
      protectedPaths: async () => [join(root, "agent.hcl"), join(root, ".agent")],
    });
    symlinkSync("agent.hcl", join(root, "cfg.txt"));
    symlinkSync("b", join(root, "chain"));
    symlinkSync(".agent/policy.auto.hcl", join(root, "b"));
    symlinkSync(".agent", join(root, "d"));
    symlinkSync("../sub/../AGENT.HCL", join(root, "sub", "up"));
    for (const path of ["cfg.txt", "chain", "d/policy.auto.hcl", "sub/up", "agent.hcl", ".agent/x"]) {
      const f = await jail.resolve(path, root);
      await expect(jail.writeFileAtomic(f, "x", undefined), path).rejects.toMatchObject({
        category: "permission_denied",
        message: expect.stringMatching(/kernel-owned/),
      });
    }
    expect(existsSync(join(root, "agent.hcl"))).toBe(false);
    expect(existsSync(join(root, ".agent"))).toBe(false);
    // Ordinary writes, through ordinary links, still work.
    symlinkSync("sub", join(root, "s"));
    await jail.writeFileAtomic(await jail.resolve("s/new/b.txt", root), "fine\n", undefined);
    expect(readFileSync(join(root, "sub", "new", "b.txt"), "utf8")).toBe("fine\n");
  });

  it("refuses every write when the protected paths cannot be learnt", async () => {
    const jail = await Jail.create([root], {
      protectedPaths: () => Promise.reject(new Error("the kernel did not answer")),
    });
    await expect(jail.writeFileAtomic(await jail.resolve("x.txt", root), "x", undefined)).rejects.toThrow(
      /did not answer/,
    );
    expect(existsSync(join(root, "x.txt"))).toBe(false);
  });
});
