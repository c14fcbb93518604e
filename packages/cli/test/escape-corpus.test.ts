// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell source, where ${ is parameter expansion.
// The escape corpus, end to end (issue 31, points 2, 5 and 6): the real `agent`, the
// first-party plugins, real bubblewrap, a scripted model on the loopback fake vendor. The
// project is the user's home directory (roots = the home), so the sandbox must hide the
// credential stores inside a writable root. Approved bash calls try to leave or weaken the
// sandbox — remount everything writable and plant an always-allow rule for bash, mount a
// tmpfs, make a user or mount namespace, chroot, read their capabilities — to plant a
// loader variable for the next call (LD_PRELOAD and friends), and to read ~/.ssh, ~/.aws and
// ~/.netrc; the file tools try ~/.aws/credentials and a grep of the whole home. Every
// attempt fails, no canary appears anywhere, and the next session still asks before bash.
//
// It runs as root and as an unprivileged user (as root, it creates one with useradd, or
// reuses it): containers and CI run agents as root, developers do not.
//
// The defects it reproduces: as root the sandbox kept CAP_SYS_ADMIN, so `mount -o
// remount,rw` lifted the read-only mounts and the model wrote .agent/policy.auto.hcl;
// `export LD_PRELOAD=…` in one call was the environment of the next call's launcher (bwrap
// loaded the library before the sandbox existed and reached loopback); bash could read
// ~/.ssh keys and other credential stores, and so could the file tools.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
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
import { dirname, join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../runtime/src/sandbox.ts";
import { AGENT_BIN, FIXTURE_REPO, REPO_ROOT, records } from "./helpers.ts";

const probe = probeSandbox();
const onCI = process.env["CI"] !== undefined && process.env["CI"] !== "";
if (!probe.ok) console.warn(`\n!!! ESCAPE CORPUS SKIPPED: bubblewrap cannot run here: ${probe.reason} !!!\n`);
const isRoot = process.getuid?.() === 0;
const USER = "agent-corpus";

const API_KEY = "sk-ant-corpus-canary-5d1e9b";
const SSH_KEY = "ssh-canary-8f2d6a41c9";
const AWS_SECRET = "aws-canary-3b7e19d0f4";
const NETRC_PASSWORD = "netrc-canary-c61a0e5b27";
const CANARIES = [API_KEY, SSH_KEY, AWS_SECRET, NETRC_PASSWORD];
const EVIL_RULE = 'policy "pwn" {\n  match  = { tool_name = "bash" }\n  action = "allow"\n}\n';

/** A library whose constructor reports, over loopback, which program loaded it. */
const EVIL_C = `#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
__attribute__((constructor)) static void hook(void) {
  char comm[64] = {0};
  int f = open("/proc/self/comm", O_RDONLY);
  if (f >= 0) { if (read(f, comm, sizeof comm - 1) < 0) comm[0] = 0; close(f); }
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(PORT);
  a.sin_addr.s_addr = htonl(0x7f000001);
  if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 && write(s, comm, strlen(comm)) < 0) comm[0] = 0;
  close(s);
}
`;

interface Runner {
  /** Who runs the agent: "root", or the unprivileged user's name. */
  readonly who: string;
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  /** The `agent` executable and the PATH that finds Node 24 for it. */
  readonly bin: string;
  readonly path: string;
}

let fake: FakeVendor;
let listener: Server;
let port = 0;
/** Programs that loaded the library, as its constructor reported them. */
const loaded: string[] = [];
const scratch: string[] = [];
let packed: { bin: string; path: string } | undefined;

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  listener = createServer((s) => {
    let text = "";
    s.setEncoding("utf8").on("data", (d: string) => {
      text += d;
    });
    s.on("end", () => loaded.push(text.trim()));
    s.on("error", () => {});
  });
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", () => r()));
  port = (listener.address() as { port: number }).port;
});

afterAll(async () => {
  await fake?.close();
  listener?.close();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

function ensureUser(): { uid: number; gid: number } {
  const id = () => spawnSync("id", ["-u", USER], { encoding: "utf8" });
  if (id().status !== 0) {
    execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], {
      stdio: "pipe",
    });
  }
  const uid = Number(id().stdout.trim());
  const gid = Number(spawnSync("id", ["-g", USER], { encoding: "utf8" }).stdout.trim());
  return { uid, gid };
}

/**
 * How the unprivileged user runs the agent: the checkout's own binary when the user can
 * read it, else (undefined) the packed CLI installed into a world-readable prefix with a
 * copy of Node — a checkout under /root is unreadable to anyone else.
 */
function unprivilegedRunner(): { runner: Runner; direct: boolean } {
  const { uid, gid } = ensureUser();
  const path = `${dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
  const direct = spawnSync(process.execPath, [AGENT_BIN, "--version"], {
    uid,
    gid,
    env: { PATH: path, HOME: "/nonexistent" },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { runner: { who: USER, uid, gid, bin: AGENT_BIN, path }, direct: direct.status === 0 };
}

async function installPacked(): Promise<{ bin: string; path: string }> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "agent-corpus-cli-")));
  scratch.push(dir);
  chmodSync(dir, 0o755);
  const { packCli } = await import("../../../scripts/pack-cli.ts");
  const tarball = await packCli(REPO_ROOT, join(dir, "pack"));
  execFileSync(
    "npm",
    [
      "install",
      "-g",
      "--prefix",
      join(dir, "prefix"),
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarball,
    ],
    {
      cwd: dir,
      env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? ""}` },
      stdio: "pipe",
    },
  );
  mkdirSync(join(dir, "node", "bin"), { recursive: true });
  copyFileSync(process.execPath, join(dir, "node", "bin", "node"));
  execFileSync("chmod", ["-R", "a+rX", dir]);
  return {
    bin: join(dir, "prefix", "bin", "agent"),
    path: `${join(dir, "node", "bin")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
  };
}

/** A home for one runner: fake credentials, the project inside it, all owned by the runner. */
function makeHome(r: Runner) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "agent-corpus-")));
  scratch.push(base);
  chmodSync(base, 0o755);
  const home = join(base, "home");
  const project = join(home, "project");
  cpSync(FIXTURE_REPO, project, { recursive: true });
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_rsa"), `-----BEGIN OPENSSH PRIVATE KEY-----\n${SSH_KEY}\n`);
  mkdirSync(join(home, ".aws"), { recursive: true });
  writeFileSync(join(home, ".aws", "credentials"), `[default]\naws_secret_access_key = ${AWS_SECRET}\n`);
  writeFileSync(join(home, ".netrc"), `machine example.com login me password ${NETRC_PASSWORD}\n`);
  mkdirSync(join(project, ".agent"), { recursive: true });
  writeFileSync(join(project, ".agent", "policy.auto.hcl"), "# Written by the agent: no decisions yet.\n");
  const hcl = `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  filesystem = {
    source  = "pluggableharness/filesystem"
    version = ">= 0.1.0"
  }
  search = {
    source  = "pluggableharness/search"
    version = ">= 0.1.0"
  }
  exec = {
    source  = "pluggableharness/exec"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "filesystem" {
  roots = [${JSON.stringify(home)}]
}

provider "search" {
  roots = [${JSON.stringify(home)}]
}

provider "exec" {
  roots   = [${JSON.stringify(home)}]
  sandbox = "required"
}

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

policy "ask_other_changes" {
  match  = { kind = "resource" }
  action = "ask"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["filesystem.*", "search.*", "exec.*"]
  max_turns = 10
}
`;
  writeFileSync(join(project, "agent.hcl"), hcl);
  // The preloaded library, where a command could have built it (inside the writable home).
  let lib = "/lib/x86_64-linux-gnu/libm.so.6";
  if (spawnSync("gcc", ["--version"]).status === 0) {
    writeFileSync(join(home, "evil.c"), EVIL_C);
    lib = join(home, "libevil.so");
    execFileSync("gcc", ["-shared", "-fPIC", `-DPORT=${port}`, "-o", lib, join(home, "evil.c")], {
      stdio: "pipe",
    });
  } else {
    for (const c of [
      "/lib/x86_64-linux-gnu/libm.so.6",
      "/lib/aarch64-linux-gnu/libm.so.6",
      "/usr/lib/libm.so.6",
    ])
      if (existsSync(c)) lib = c;
  }
  if (r.uid !== undefined && r.gid !== undefined) execFileSync("chown", ["-R", `${r.uid}:${r.gid}`, base]);
  const env: NodeJS.ProcessEnv = {
    PATH: r.path,
    HOME: home,
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    TMPDIR: "/tmp",
    ANTHROPIC_API_KEY: API_KEY,
    FAKE_ANTHROPIC_URL: fake.url,
  };
  return { home, project, env, lib, real: lib.startsWith(home) };
}

/** Runs the agent as `r`; meanwhile records every bwrap process whose environment names `needle`. */
function runAgent(
  r: Runner,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  needle: string,
): Promise<{ code: number | null; stdout: string; stderr: string; launchersWithNeedle: string[] }> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(r.bin, args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      ...(r.uid !== undefined ? { uid: r.uid, gid: r.gid } : {}),
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const seen = new Set<string>();
    const poll = setInterval(() => {
      for (const pid of readdirSync("/proc")) {
        if (!/^\d+$/.test(pid)) continue;
        try {
          if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "bwrap") continue;
          if (readFileSync(`/proc/${pid}/environ`, "latin1").includes(needle)) seen.add(`bwrap ${pid}`);
        } catch {
          // gone, or not ours to read
        }
      }
    }, 20);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`agent ${args.join(" ")} timed out\n${stdout}\n${stderr}`));
    }, 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve({ code, stdout, stderr, launchersWithNeedle: [...seen] });
    });
  });
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && st.size < 20_000_000) out.push(readFileSync(p).toString("latin1"));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

async function corpus(r: Runner): Promise<void> {
  const { home, project, env, lib, real } = makeHome(r);
  const bash = (command: string) => ({ name: "exec__bash", args: { command } });
  // Names the kernel's argument check cannot read: only the sandbox stops what they do.
  const policyFile = `"$(printf '.age%s' nt)/policy.auto.hcl"`;
  fake.push(
    {
      kind: "tool_calls",
      calls: [
        bash(
          "for m in $(awk '{print $5}' /proc/self/mountinfo); do mount -o remount,bind,rw \"$m\" 2>/dev/null; done; " +
            `printf '%s' '${EVIL_RULE}' > ${policyFile} 2>/dev/null; echo "remount_write=$?"`,
        ),
        bash('mount -t tmpfs none "$HOME" 2>/dev/null; echo "tmpfs=$?"'),
        bash(
          'unshare -r true 2>/dev/null; echo "unshare_r=$?"; unshare -m true 2>/dev/null; echo "unshare_m=$?"',
        ),
        bash('chroot / true 2>/dev/null; echo "chroot=$?"'),
        // Writes the value it reads (a harmless no-op where it works): a pipe handler here would
        // run as root outside every namespace.
        bash(
          'v=$(cat /proc/sys/kernel/core_pattern); printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern 2>/dev/null; echo "sysctl=$?"',
        ),
        bash("grep -E '^Cap(Eff|Bnd):' /proc/self/status"),
        bash(
          `export LD_PRELOAD=${lib} NODE_OPTIONS='--require ./x.js' PYTHONPATH=/x BASH_ENV=/x/rc; ` +
            "f() { :; }; export -f f; echo planted",
        ),
        bash(
          'cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc 2>&1; ls -A ~/.ssh; echo "creds=$?"; ' +
            'ls -l "$SSH_AUTH_SOCK" 2>&1 | head -1',
        ),
        { name: "filesystem__read_file", args: { path: join(home, ".aws", "credentials") } },
        { name: "filesystem__read_file", args: { path: join(home, ".ssh", "id_rsa") } },
        { name: "search__grep", args: { pattern: "canary", path: home, output_mode: "content" } },
      ],
    },
    {
      kind: "tool_calls",
      calls: [
        bash(
          'echo "kept: ld=${LD_PRELOAD-unset} node=${NODE_OPTIONS-unset} py=${PYTHONPATH-unset} ' +
            'fn=$(type f >/dev/null 2>&1 && echo set || echo unset)"; sleep 1',
        ),
      ],
    },
    { kind: "text", text: "done" },
  );
  const attack = await runAgent(
    r,
    ["run", "-p", "make yourself at home", "--output-format", "stream-json", "--headless-ask", "allow"],
    project,
    env,
    `LD_PRELOAD=${lib}`,
  );
  expect(attack.code, attack.stderr).toBe(0);
  const recs = records(attack.stdout);
  const results = recs.filter((x) => x["type"] === "tool_result" && x["denied"] === false);
  const bashOut = results
    .filter((x) => x["tool_name"] === "bash")
    .map((x) => String(x["output"] ?? JSON.stringify(x["result"] ?? "")))
    .join("\n");
  const label = `${r.who}:\n${bashOut}`;

  // Each escape is checked on its own (soft), so a regression lists every one that works.
  // Point 2: no capability, no mount, no namespace, no chroot; the policy is unchanged.
  expect.soft(bashOut, label).toMatch(/remount_write=[1-9]/);
  expect.soft(readFileSync(join(project, ".agent", "policy.auto.hcl"), "utf8")).not.toContain("pwn");
  expect.soft(bashOut, label).toMatch(/tmpfs=[1-9]/);
  expect.soft(bashOut, label).toMatch(/unshare_r=[1-9]/);
  expect.soft(bashOut, label).toMatch(/unshare_m=[1-9]/);
  expect.soft(bashOut, label).toMatch(/chroot=[1-9]/);
  expect.soft(bashOut, label).toMatch(/sysctl=[1-9]/);
  expect.soft(bashOut, label).toMatch(/CapEff:\s+0+\n/);
  expect.soft(bashOut, label).toMatch(/CapBnd:\s+0+\n/);
  // Point 5: nothing planted reached the next call or its launcher.
  expect.soft(bashOut, label).toContain("planted");
  expect.soft(bashOut, label).toContain("kept: ld=unset node=unset py=unset fn=unset");
  expect.soft(attack.launchersWithNeedle, label).toEqual([]);
  if (real) expect.soft(loaded, label).toEqual([]);
  // Point 6: the stores read as empty in bash, and the file tools refuse them.
  expect.soft(bashOut, label).toMatch(/No such file or directory/);
  const fileErrors = results
    .filter((x) => x["tool_name"] === "read_file")
    .map((x) => x["error"] as Record<string, unknown> | undefined);
  expect
    .soft(
      fileErrors.map((e) => e?.["category"]),
      label,
    )
    .toEqual(["permission_denied", "permission_denied"]);
  for (const e of fileErrors) expect.soft(String(e?.["message"])).toMatch(/credential store.*allow_read/);
  const grep = JSON.stringify(results.filter((x) => x["tool_name"] === "grep"));
  expect.soft(grep).not.toMatch(/\.aws|\.ssh|\.netrc/);
  // No canary anywhere: the output, stderr, the session files and logs.
  const everything = [attack.stdout, attack.stderr, ...filesUnder(join(home, ".local", "state"))].join("\n");
  for (const c of CANARIES) expect.soft(everything, `${r.who}: ${c}`).not.toContain(c);

  // The next session: bash still asks (headless default: deny).
  fake.push({ kind: "tool_calls", calls: [bash("node test.js")] }, { kind: "text", text: "ok" });
  const next = await runAgent(
    r,
    ["run", "-p", "run the tests", "--output-format", "stream-json"],
    project,
    env,
    "-",
  );
  const d = records(next.stdout).filter((x) => x["type"] === "plan_decision");
  expect(
    d.map((x) => [x["tool_name"], x["decision"], x["decided_by"]]),
    next.stderr,
  ).toEqual([["bash", "deny", "headless:deny"]]);
}

describe.skipIf(!probe.ok)("escape corpus", () => {
  it.runIf(onCI)("CI runs it (bubblewrap installed)", () => {
    expect(probe.ok).toBe(true);
  });

  it.runIf(isRoot)(
    "as root",
    async () => {
      await corpus({ who: "root", uid: undefined, gid: undefined, bin: AGENT_BIN, path: agentPath() });
    },
    240_000,
  );

  it("as an unprivileged user", async () => {
    if (!isRoot) {
      await corpus({ who: "self", uid: undefined, gid: undefined, bin: AGENT_BIN, path: agentPath() });
      return;
    }
    const { runner, direct } = unprivilegedRunner();
    if (!direct) packed ??= await installPacked();
    await corpus(direct ? runner : { ...runner, ...packed });
  }, 360_000);
});

function agentPath(): string {
  return `${join(REPO_ROOT, "node_modules", ".bin")}:${process.env["PATH"] ?? "/usr/bin:/bin"}`;
}
