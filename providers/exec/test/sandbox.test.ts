// bash in its bubblewrap sandbox, over the real plugin boundary: writes outside the
// roots fail, /tmp is private, the kernel-owned paths stay read-only (and absent ones
// stay absent), no other process is visible, there is no network unless configured, and
// nothing outlives the plugin. Where bubblewrap cannot run these tests are skipped with
// the reason; on CI (CI set) that is a failure instead, since CI installs bubblewrap.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gitMetadataPaths } from "../../../packages/config/src/git-paths.ts";
import { probeSandbox } from "../src/sandbox.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const probe = probeSandbox();
if (!probe.ok) {
  const msg = `SANDBOX TESTS SKIPPED: bubblewrap cannot run here: ${probe.reason}`;
  console.warn(`\n${"!".repeat(msg.length)}\n${msg}\n${"!".repeat(msg.length)}\n`);
}

describe("bubblewrap is available where CI runs", () => {
  it.runIf(process.env["CI"] !== undefined && process.env["CI"] !== "")("CI has bubblewrap", () => {
    expect(probe).toMatchObject({ ok: true });
  });
});

describe.skipIf(!probe.ok)("bash in the sandbox", () => {
  let root: string;
  let project: string;
  let outside: string;
  let h: ToolHarness;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "ph-sandbox-")));
    project = join(root, "project");
    outside = join(root, "outside");
    mkdirSync(join(project, ".agent"), { recursive: true });
    writeFileSync(join(project, ".agent", "policy.auto.hcl"), "# kernel-owned\n");
    mkdirSync(outside);
    h = new ToolHarness({ executable: MAIN, name: "exec" });
    h.kernel.execEnvironment = {
      variables: {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        HOME: root,
        LANG: "C.UTF-8",
        VISIBLE_VAR: "seen",
      },
      withheld: ["SANDBOX_CANARY_TOKEN"],
      protectedPaths: [
        join(project, "agent.hcl"),
        join(project, ".agent"),
        join(root, "state"),
        // The project has no repository yet: a command may make one, and from the next
        // command on its metadata is read-only (git-paths.ts names it ahead).
        ...gitMetadataPaths(project),
      ],
    };
    await h.configure({ roots: [project], sandbox: "required", kill_grace_ms: 300 });
  });

  afterAll(async () => {
    await h?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const bash = async (command: string, cwd = project) => {
    const res = await h.invoke("bash", { command }, { cwd });
    if (res.error) throw new Error(`bash failed: ${res.error.message}`);
    return { code: Number(res.result!["exit_code"]), out: String(res.result!["output"]) };
  };

  it("writes inside the roots and nowhere else; /tmp is private", async () => {
    const r = await bash(
      `echo in > inside.txt && echo tmp > /tmp/private-${process.pid} && cat /tmp/private-${process.pid}`,
    );
    expect(r).toEqual({ code: 0, out: "tmp\n" });
    expect(readFileSync(join(project, "inside.txt"), "utf8")).toBe("in\n");
    expect(existsSync(`/tmp/private-${process.pid}`)).toBe(false);
    // Outside the roots: a sibling of the project, HOME, system directories.
    expect((await bash(`echo out > ${outside}/x.txt`)).code).not.toBe(0);
    expect(existsSync(join(outside, "x.txt"))).toBe(false);
    expect((await bash("touch /etc/sandbox-test")).out).toMatch(/Read-only file system/);
    expect((await bash("touch /usr/sandbox-test")).out).toMatch(/Read-only file system/);
  });

  it("keeps kernel-owned paths read-only inside a root, through every trick, and absent ones absent", async () => {
    const tricks = [
      "echo 'policy \"x\" {}' >> .agent/policy.auto.hcl",
      "rm -f .agent/policy.auto.hcl",
      "mv .agent .agent-moved",
      "ln -s .agent link && echo x > link/policy.auto.hcl",
      "cp /etc/hostname .agent/agent.lock.hcl",
      "echo 'x' > agent.hcl",
      "mkdir -p sub && cd sub && echo x > ../agent.hcl",
      "touch .agent/new-file",
    ];
    for (const t of tricks) {
      const r = await bash(t);
      expect(r.code, t).not.toBe(0);
    }
    expect(readFileSync(join(project, ".agent", "policy.auto.hcl"), "utf8")).toBe("# kernel-owned\n");
    expect(readdirSync(join(project, ".agent"))).toEqual(["policy.auto.hcl"]);
    // The placeholder mounted over the absent agent.hcl is gone again after the command.
    expect(existsSync(join(project, "agent.hcl"))).toBe(false);
  });

  it("keeps a repository's git metadata read-only, pinned in place, and git working", async () => {
    const id = "-c user.name=T -c user.email=t@example.com";
    // No repository yet: nothing was mounted that would make one; a command may make it.
    expect(existsSync(join(project, ".git"))).toBe(false);
    // (The shell keeps its directory between calls: every command here starts with a cd.)
    const at = `cd '${project}' && `;
    expect(
      (await bash(`${at}git init -q -b main && git ${id} commit -q --allow-empty -m one && echo made`)).out,
    ).toBe("made\n");
    // A submodule's git directory, as `git submodule` absorbs it, with no hooks directory.
    const sub = join(project, ".git", "modules", "sub");
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, "HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(sub, "config"), "[core]\n\tbare = false\n");
    const config = readFileSync(join(project, ".git", "config"), "utf8");
    const tricks = [
      "git config core.fsmonitor /tmp/fsmonitor.sh",
      "echo '[core] fsmonitor = /tmp/x' >> .git/config",
      "rm -f .git/config",
      "mv .git/config .git/config.old",
      "printf '#!/bin/sh\\n' > .git/hooks/pre-commit",
      "rm -rf .git/hooks",
      "echo /tmp/elsewhere > .git/commondir",
      "mv .git/hooks .git/hooks-old",
      "mv .git .git-old",
      "echo '[core] fsmonitor = /tmp/x' >> .git/modules/sub/config",
      "mkdir -p .git/modules/sub/hooks && echo x > .git/modules/sub/hooks/post-checkout",
    ];
    for (const t of tricks) expect((await bash(`${at}${t} && echo WROTE`)).out, t).not.toContain("WROTE");
    // git itself goes on working: objects, refs, the index and their locks are writable.
    const work = await bash(
      `${at}echo x > f && git add f && git ${id} commit -q -m two && git branch side && git stash list && git log --format=%s`,
    );
    expect(work.out).toBe("two\none\n");
    expect(readFileSync(join(project, ".git", "config"), "utf8")).toBe(config);
    expect(readdirSync(join(project, ".git", "hooks")).filter((h) => !h.endsWith(".sample"))).toEqual([]);
    expect(readFileSync(join(sub, "config"), "utf8")).toBe("[core]\n\tbare = false\n");
    // The placeholders held for the command (commondir, the submodule's hooks) are gone again.
    expect(existsSync(join(project, ".git", "commondir"))).toBe(false);
    expect(existsSync(join(sub, "hooks"))).toBe(false);
    // Destroying what marks a git directory does not open it for the next command: without
    // HEAD, or after a move across file systems (a copy, then deleting what it can).
    await bash(`${at}rm -f .git/HEAD .git/modules/sub/HEAD`);
    await bash(`${at}mkdir -p /tmp/g && mv .git /tmp/g/`);
    for (const t of ["echo '[core] fsmonitor = /tmp/x' >> .git/config", "echo x >> .git/modules/sub/config"])
      expect((await bash(`${at}${t} && echo WROTE`)).out, t).not.toContain("WROTE");
    expect(readFileSync(join(project, ".git", "config"), "utf8")).toBe(config);
    rmSync(join(project, ".git"), { recursive: true, force: true });
  });

  it("sees no process but its own: the kernel's /proc entry and environment are out of reach", async () => {
    const r = await bash(
      `ls /proc | grep -cE '^[0-9]+$'; cat /proc/${process.pid}/environ >/dev/null 2>&1 && echo LEAK || echo hidden; tr '\\0' '\\n' < /proc/1/environ 2>/dev/null | grep -c CANARY`,
    );
    const [count, hidden] = r.out.trim().split("\n");
    expect(Number(count)).toBeLessThan(8);
    expect(hidden).toBe("hidden");
  });

  it("hides credential stores, even inside a root; deny_read adds, allow_read gives back", async () => {
    mkdirSync(join(root, ".ssh"), { recursive: true });
    writeFileSync(join(root, ".ssh", "id_rsa"), "KEY-CANARY\n");
    writeFileSync(join(root, ".ssh", "known_hosts"), "host-line\n");
    mkdirSync(join(root, ".aws"), { recursive: true });
    writeFileSync(join(root, ".aws", "credentials"), "AWS-CANARY\n");
    writeFileSync(join(root, ".netrc"), "NETRC-CANARY\n");
    mkdirSync(join(project, "secrets"), { recursive: true });
    writeFileSync(join(project, "secrets", "x"), "PROJECT-CANARY\n");
    const c = new ToolHarness({ executable: MAIN, name: "exec-creds" });
    c.kernel.execEnvironment = h.kernel.execEnvironment;
    try {
      const bad = await c
        .configure({ roots: [project], deny_read: ["relative/path"] })
        .catch((e: Error) => e);
      expect(String(bad)).toMatch(/deny_read entries must be absolute paths or start with ~\//);
      // The whole home is a root here: the stores must be hidden inside a writable directory.
      await c.configure({
        roots: [root],
        sandbox: "required",
        deny_read: ["~/project/secrets"],
        allow_read: ["~/.ssh/known_hosts"],
      });
      const run = async (command: string) => {
        const res = await c.invoke("bash", { command }, { cwd: project });
        return String(res.result?.["output"] ?? JSON.stringify(res.error));
      };
      const out = await run(
        "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc secrets/x; ls -A ~/.aws; cat ~/.ssh/known_hosts; " +
          "echo k > ~/.ssh/authorized_keys || echo refused-ssh; echo y > secrets/new || echo refused-secrets; " +
          "echo ok > visible.txt && cat visible.txt",
      );
      expect(out).not.toMatch(/CANARY/);
      expect(out).toContain("host-line");
      expect(out).toContain("refused-ssh");
      expect(out).toContain("refused-secrets");
      expect(out).toContain("ok");
      expect(existsSync(join(root, ".ssh", "authorized_keys"))).toBe(false);
    } finally {
      await c.close();
    }
  });

  it("runs with the environment the kernel gave it, nothing of the plugin's own", async () => {
    const r = await bash("env");
    expect(r.out).toContain("VISIBLE_VAR=seen");
    expect(r.out).not.toMatch(/PLUGIN_|SANDBOX_CANARY/);
    expect(r.out).toContain("TMPDIR=/tmp");
  });

  it("has no network by default, and has it when the block allows it", async () => {
    const server: Server = createServer((s) => s.end("hello\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const probeCmd = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo refused`;
      expect((await bash(probeCmd)).out.trim().split("\n").pop()).toBe("refused");
      const open = new ToolHarness({ executable: MAIN, name: "exec-net" });
      try {
        await open.configure({ roots: [project], sandbox: "required", network: true });
        const res = await open.invoke("bash", { command: probeCmd }, { cwd: project });
        expect(String(res.result!["output"]).trim()).toBe("hello");
      } finally {
        await open.close();
      }
    } finally {
      server.close();
    }
  });

  it("reaches only allowed_hosts, through the provider's proxy", async () => {
    const server: Server = createServer((s) => {
      s.once("data", () => s.end("HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nhello\n"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const limited = new ToolHarness({ executable: MAIN, name: "exec-hosts" });
    try {
      await limited.configure({ roots: [project], sandbox: "required", allowed_hosts: ["127.0.0.1"] });
      const run = async (command: string) =>
        String((await limited.invoke("bash", { command }, { cwd: project })).result?.["output"] ?? "");
      expect(await run(`curl -s http://127.0.0.1:${port}/`)).toBe("hello\n");
      expect(await run(`curl -s -o /dev/null -w '%{http_code}' http://localhost:${port}/`)).toBe("403");
      // Around the proxy there is still no network at all.
      expect(
        (await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo open || echo refused`))
          .trim()
          .split("\n")
          .pop(),
      ).toBe("refused");
    } finally {
      await limited.close();
      server.close();
    }
  });

  it("leaves no process behind when the plugin dies", { timeout: 30_000 }, async () => {
    const marker = `300.${process.pid}${Date.now() % 100000}`;
    const victim = new ToolHarness({ executable: MAIN, name: "exec-victim" });
    await victim.configure({ roots: [project], sandbox: "required" });
    const running = victim.invoke(
      "bash",
      { command: `sleep ${marker} & echo started; wait` },
      { cwd: project },
    );
    const found = () =>
      readdirSync("/proc").filter((p) => {
        if (!/^\d+$/.test(p)) return false;
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(marker);
        } catch {
          return false;
        }
      });
    const readOr = (file: string) => {
      try {
        return readFileSync(file, "utf8");
      } catch {
        return "";
      }
    };
    const stat = (pid: string) =>
      readOr(`/proc/${pid}/stat`)
        .replace(/^.*\) /, "")
        .split(" ");
    const comm = (pid: string) => readOr(`/proc/${pid}/comm`).trim();
    const sleeper = () => found().find((p) => comm(p) === "sleep");
    const end = Date.now() + 10_000;
    while (!sleeper() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(found().length).toBeGreaterThan(0);
    // The sandbox's init must share the command leader's process group, so the watchdog's
    // group kill takes the whole PID namespace; with bwrap's --new-session it led its own
    // group and survived about one kill in eight (only --die-with-parent could reach it).
    const leader = stat(sleeper()!)[2]!; // the sleep's process group
    expect(comm(leader)).toBe("bwrap");
    const chain = found()
      .map((p) => `${p}:${comm(p)}:ppid=${stat(p)[1]}:pgid=${stat(p)[2]}:sid=${stat(p)[3]}`)
      .join(" ");
    expect(
      comm(stat(leader)[1]!),
      `the group leader (${leader}) of ${chain} is the outer bwrap, outside the sandbox`,
    ).not.toBe("bwrap");
    process.kill(victim.plugin.host.pid!, "SIGKILL");
    await running.catch(() => {});
    // SIGKILL cascades through bwrap's parent-death signal; on a loaded 2-core machine the
    // last of it can take a while to be scheduled.
    const gone = Date.now() + 15_000;
    while (found().length > 0 && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
    const left = found().map((p) => {
      try {
        return readFileSync(`/proc/${p}/stat`, "utf8").slice(0, 80);
      } catch {
        return `${p} (gone)`;
      }
    });
    expect(left).toEqual([]);
    await victim.close().catch(() => {});
  });
});
