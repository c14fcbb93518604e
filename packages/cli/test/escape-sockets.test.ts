// No socket answers the sandbox (issue 31, point 4), end to end: a real `agent serve` and a
// real `agent run` with a scripted model, both with XDG_RUNTIME_DIR and TMPDIR outside /tmp
// (where the sandbox's private /tmp does not cover them). An approved bash command runs a
// probe that (a) attaches to the served kernel to create a session and approve that
// session's write itself, (b) calls every socket it finds as the kernel's callback service
// (Describe, ExecEnvironment, Log) and as a plugin, and (c) lists the runtime directory and
// TMPDIR. Everything fails and nothing is approved. Outside the sandbox, a process of the
// same user without the server's token or a plugin's certificate is refused the same way;
// with the token read from the server's private record, the same probe works (so the
// refusals above are the sockets' doing, not a broken probe).
//
// The defects it reproduces: a command created a session through the serve socket and
// approved that session's write; the plugins' callback sockets answered a command as that
// plugin; neither socket asked the caller for any credential.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { create, type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { file_pluggableharness_frontend_v1_frontend } from "@pluggableharness/protocol/frontend";
import { file_grpc_health_v1_health } from "@pluggableharness/protocol/health";
import { file_pluggableharness_kernel_v1_kernel } from "@pluggableharness/protocol/kernel";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../../providers/exec/src/sandbox.ts";
import { AGENT_BIN, agent, REPO_ROOT, records, type Sandbox, sandbox } from "./helpers.ts";

const sandboxed = probeSandbox().ok;
if (!sandboxed && process.env["CI"]) throw new Error("bubblewrap must run in CI for the socket escape test");
if (!sandboxed) console.warn("escape-sockets: bubblewrap cannot run here; the sandbox half is skipped");

const API_KEY = "sk-ant-canary-5c1e9a7b3d2f4e6a";
const PROBE = join(REPO_ROOT, "packages", "cli", "test", "fixtures", "socket-probe.mjs");
const NODE_MODULES = join(REPO_ROOT, "node_modules");

let sb: Sandbox;
let outside: string;
let runtime: string;
let tmp: string;
let repo: string;
let env: NodeJS.ProcessEnv;
let serveFake: FakeVendor;
let runFake: FakeVendor;
let server: ChildProcess;
let socket = "";

/** A scratch directory the sandbox's private /tmp, /var/tmp and /dev/shm do not cover. */
function scratchOutsideTmp(): string {
  for (const base of [homedir(), REPO_ROOT]) {
    let real: string;
    try {
      real = realpathSync(base);
    } catch {
      continue;
    }
    if (["/tmp", "/var/tmp", "/dev/shm"].some((t) => real === t || real.startsWith(`${t}/`))) continue;
    try {
      return mkdtempSync(join(real, ".ph-sock-"));
    } catch {
      // not writable: try the next
    }
  }
  throw new Error("no writable directory outside /tmp for XDG_RUNTIME_DIR and TMPDIR");
}

function descriptorSet(roots: DescFile[]): Uint8Array {
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    for (const d of f.dependencies) visit(d);
    ordered.push(f);
  };
  for (const r of roots) visit(r);
  return toBinary(
    FileDescriptorSetSchema,
    create(FileDescriptorSetSchema, { file: ordered.map((f) => f.proto) }),
  );
}

interface ProbeResult {
  listings: Record<string, string[] | string>;
  sockets: Record<string, Record<string, string>>;
  serve: { record?: string; created?: string; asked?: string; approved?: string; outcome?: string };
}

function parseProbe(text: string): ProbeResult {
  const line = /PROBE (\{.*\})/.exec(text);
  if (!line) throw new Error(`the probe printed no result:\n${text}`);
  return JSON.parse(line[1]!) as ProbeResult;
}

/** The probe run directly by the test: a process of this user outside any sandbox. */
function probeOutside(dirs: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [PROBE, NODE_MODULES, join(repo, "probe.binpb"), socket, repo, ...dirs],
      { env: { ...process.env, ...extraEnv }, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
        else resolve(parseProbe(stdout));
      },
    );
  });
}

const answered = (p: ProbeResult) =>
  Object.entries(p.sockets).flatMap(([s, calls]) =>
    Object.entries(calls)
      .filter(([, v]) => !v.startsWith("refused"))
      .map(([m, v]) => `${s} ${m}: ${v}`),
  );

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo("project");
  // Writes ask in this project: the served session's write is a permission to answer. The
  // filesystem provider runs as a process of its own, so that it has sockets to try: in
  // the sandbox host (its default) it has none, its port runs over the host's pipe.
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
    .replace(
      'policy "allow_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "allow"',
      'policy "ask_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "ask"',
    )
    .replace(
      'source  = "pluggableharness/filesystem"\n    version = ">= 0.1.0"',
      'source  = "pluggableharness/filesystem"\n    version = ">= 0.1.0"\n    isolation = "process"',
    );
  expect(hcl).toContain("ask_file_edits");
  expect(hcl).toContain('isolation = "process"');
  writeFileSync(join(repo, "agent.hcl"), hcl);
  cpSync(PROBE, join(repo, "probe.mjs"));
  writeFileSync(
    join(repo, "probe.binpb"),
    descriptorSet([
      file_pluggableharness_frontend_v1_frontend,
      file_pluggableharness_kernel_v1_kernel,
      file_grpc_health_v1_health,
    ]),
  );
  outside = scratchOutsideTmp();
  runtime = join(outside, "run");
  tmp = join(outside, "tmp");
  mkdirSync(runtime, { mode: 0o700 });
  mkdirSync(tmp, { mode: 0o700 });
  // What the served kernel's model does for whoever gets a session there: a write that asks.
  serveFake = await startFakeVendor({
    vendor: "anthropic",
    script: [
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__write_file", args: { path: "written.txt", content: "x" } }],
      },
      { kind: "text", text: "written" },
    ],
  });
  runFake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    XDG_RUNTIME_DIR: runtime,
    TMPDIR: tmp,
    ANTHROPIC_API_KEY: API_KEY,
    FIXTURE_ROOT: repo,
  };
  server = spawn(AGENT_BIN, ["serve"], {
    cwd: repo,
    env: { ...env, FAKE_ANTHROPIC_URL: serveFake.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let banner = "";
  let err = "";
  server.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`agent serve did not start:\n${banner}\n${err}`)), 45_000);
    server.stdout!.on("data", (d: Buffer) => {
      banner += d.toString();
      const m = /on unix:(\S+)/.exec(banner);
      if (m) {
        socket = m[1]!;
        clearTimeout(t);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`agent serve exited ${code}:\n${banner}\n${err}`)));
  });
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await serveFake?.close();
  await runFake?.close();
  sb?.cleanup();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

describe("sockets and the sandbox", () => {
  it.skipIf(!sandboxed)(
    "a command reaches no kernel, plugin or server socket and cannot approve anything",
    async () => {
      const q = (s: string) => `'${s}'`;
      const dirs = [runtime, join(runtime, "agent"), tmp, "/tmp"];
      runFake.push(
        {
          kind: "tool_calls",
          calls: [
            {
              name: "exec__bash",
              args: {
                command: `${q(process.execPath)} probe.mjs ${q(NODE_MODULES)} probe.binpb ${q(socket)} ${q(repo)} ${dirs.map(q).join(" ")}; echo probe=$?`,
              },
            },
            { name: "exec__bash", args: { command: `ls -A ${q(runtime)} ${q(tmp)}; echo listed=$?` } },
          ],
        },
        { kind: "text", text: "done" },
      );
      const r = await agent(
        ["run", "-p", "look around", "--output-format", "stream-json", "--headless-ask", "allow"],
        { cwd: repo, env: { ...env, FAKE_ANTHROPIC_URL: runFake.url }, timeoutMs: 90_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      const outputs = records(r.stdout)
        .filter((x) => x["type"] === "tool_result" && x["tool_name"] === "bash")
        .map((x) => String(x["output"] ?? ""));
      expect(outputs).toHaveLength(2);
      expect(outputs[0]).toContain("probe=0");
      const probe = parseProbe(outputs[0]!);

      // (a) No session, no approval, no write: the served kernel never even called its model.
      expect(probe.serve.created, JSON.stringify(probe.serve)).toBeUndefined();
      expect(probe.serve.approved).toBeUndefined();
      expect(probe.serve.outcome).toMatch(/^refused/);
      expect(probe.serve.record).toMatch(/^unreadable/);
      expect(serveFake.requests).toHaveLength(0);
      expect(existsSync(join(repo, "written.txt"))).toBe(false);
      // (b) Not one socket answered, as the kernel's callbacks or as a plugin.
      expect(answered(probe)).toEqual([]);
      // (c) Nothing there: TMPDIR is empty; in the runtime directory, no socket, no record,
      // only the way to the command's own scratch directory (exec's shell state).
      expect(Object.keys(probe.sockets)).toEqual([]);
      expect(probe.listings[tmp]).toEqual([]);
      expect(JSON.stringify(probe.listings)).not.toMatch(/serve-|plugin|kernel/);
      expect(outputs[1]).toContain(`${tmp}:\nlisted=0`);
      expect(outputs[1]).not.toContain("serve-");
    },
    120_000,
  );

  it("outside the sandbox, a process without the token or a certificate is refused", async () => {
    // Without the server's token: refused before anything flows.
    const stranger = await probeOutside([join(runtime, "agent")], { PROBE_NO_TOKEN: "1" });
    expect(stranger.serve.created).toBeUndefined();
    expect(stranger.serve.outcome).toMatch(/^refused: 16 /);
    expect(serveFake.requests).toHaveLength(0);

    // With the token from the server's 0600 record (this user's own client): it works, and
    // the served kernel starts its plugins, whose sockets a stranger then tries.
    const owner = await probeOutside([]);
    expect(owner.serve).toMatchObject({ record: "read", asked: "write_file", approved: "human:once" });
    expect(owner.serve.outcome).toBe("completed");
    expect(readFileSync(join(repo, "written.txt"), "utf8")).toBe("x");

    const plugins = await probeOutside([join(runtime, "agent"), tmp], { PROBE_NO_TOKEN: "1" });
    const sockets = Object.keys(plugins.sockets);
    if (sandboxed) {
      // The served kernel's sandboxed filesystem plugin is a process (asked for above): its
      // socket and the kernel's.
      expect(
        sockets.some((s) => /\/kernel$/.test(s)),
        JSON.stringify(plugins.listings),
      ).toBe(true);
      expect(sockets.some((s) => /\/plugin[^/]*$/.test(s))).toBe(true);
    }
    expect(answered(plugins)).toEqual([]);
  }, 120_000);
});
