// What sandboxes hide (hidden-paths.ts): the rules that turn directories into bwrap masks,
// and, with real bubblewrap, that a unix socket in a hidden directory cannot be reached
// from inside while a writable root inside that directory still works.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { maskArgs } from "../src/hidden-paths.ts";
import { probeSandbox, wrap } from "../src/sandbox.ts";

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "ph-hidden-")));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const dir = (name: string) => {
  const d = join(scratch, name);
  mkdirSync(d, { recursive: true });
  return d;
};

/** The tmpfs mounts of a plan, in order, and its binds. */
const tmpfs = (args: string[]) => args.flatMap((a, i) => (a === "--tmpfs" ? [args[i + 1]!] : []));
const binds = (args: string[]) => args.flatMap((a, i) => (a === "--bind" ? [args[i + 1]!] : []));

describe("mask rules", () => {
  it("hides what exists, by its real path, once, and never the system or a root itself", () => {
    const run = dir("run");
    const inner = dir("run/agent");
    const link = join(scratch, "run-link");
    symlinkSync(run, link);
    const root = dir("project");
    const plan = maskArgs([link, inner, join(scratch, "absent"), "/", "/usr", "relative", root], {
      writable: [root],
      privateTmp: false,
      argv: ["/bin/sh"],
    });
    // The symlink resolves to run; run/agent is inside it; the rest is skipped.
    expect(tmpfs(plan.beforeRoots)).toEqual([run]);
    expect(plan.afterRoots).toEqual([]);
  });

  it("a private /tmp already hides what lies in it, unless a root shows it again", () => {
    const root = dir("proj2");
    const runInRoot = dir("proj2/.run");
    const elsewhere = dir("elsewhere");
    const plan = maskArgs([elsewhere, runInRoot], { writable: [root], privateTmp: true, argv: [] });
    expect(tmpfs(plan.beforeRoots)).toEqual([]);
    // Inside a root: hidden after the root is bound.
    expect(tmpfs(plan.afterRoots)).toEqual([runInRoot]);
  });

  it("binds a writable directory inside a mask again after it, and an install it would hide", () => {
    const root = dir("proj3");
    const run = dir("proj3/run");
    const own = dir("proj3/run/ph-1-abcdef");
    const plan = maskArgs([run], { writable: [root, own], privateTmp: false, argv: [] });
    expect(plan.afterRoots).toEqual(["--tmpfs", run, "--bind", own, own]);
    // A mask over the program's install binds its node_modules back read-only.
    const tools = dir("tools/node_modules/x/bin");
    writeFileSync(join(tools, "prog"), "");
    const hidden = maskArgs([join(scratch, "tools")], {
      writable: [],
      privateTmp: false,
      argv: [join(tools, "prog")],
    });
    expect(hidden.beforeRoots).toEqual([
      "--tmpfs",
      join(scratch, "tools"),
      "--ro-bind",
      join(scratch, "tools/node_modules"),
      join(scratch, "tools/node_modules"),
    ]);
    expect(binds(hidden.beforeRoots)).toEqual([]);
  });
});

const sandbox = probeSandbox();
if (!sandbox.ok && process.env["CI"]) throw new Error(`CI must run bubblewrap: ${sandbox.reason}`);

describe.skipIf(!sandbox.ok)("a hidden directory in a real sandbox", () => {
  let server: Server | undefined;
  afterAll(() => server?.close());

  it("hides a socket there from a command, and keeps a root inside it writable", async () => {
    // Outside /tmp, where a private /tmp would not cover it (as XDG_RUNTIME_DIR usually is).
    const base = realpathSync(mkdtempSync(join(homedir(), ".ph-hidden-")));
    try {
      const hidden = join(base, "run");
      mkdirSync(join(hidden, "work"), { recursive: true });
      const socket = join(hidden, "s.sock");
      server = createServer((c) => c.end("hello\n"));
      await new Promise<void>((resolve) => server!.listen(socket, resolve));
      const node = process.execPath;
      const probe = `require("net").connect(${JSON.stringify(socket)}).on("connect",()=>{console.log("reached");process.exit(0)}).on("error",e=>{console.log(e.code);process.exit(0)})`;
      const run = (hiddenDirs: string[]) => {
        const w = wrap(
          {
            bwrap: (sandbox as { bwrap: string }).bwrap,
            writable: [join(hidden, "work")],
            protectedPaths: [],
            network: false,
            cwd: join(hidden, "work"),
            hidden: hiddenDirs,
          },
          [node, "-e", `${probe}; require("fs").writeFileSync("out.txt", "x")`],
        );
        const r = spawnSync(w.file, w.args, { encoding: "utf8", timeout: 20_000 });
        return `${r.stdout}${r.stderr}`.trim();
      };
      // Not hidden, the socket answers through the read-only view.
      expect(run([])).toBe("reached");
      // Hidden: gone; the root inside the hidden directory is still there and writable.
      expect(run([hidden])).toBe("ENOENT");
      expect(spawnSync("cat", [join(hidden, "work", "out.txt")], { encoding: "utf8" }).stdout).toBe("x");
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
