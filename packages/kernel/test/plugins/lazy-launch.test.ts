// Providers described from the describe cache are launched only when used. The first-party
// providers here are real subprocesses: small packages under a scratch installation root
// whose entry records each start, then runs one of the agent-loop test fixtures.
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ProducerRefSchema } from "@pluggableharness/protocol/common";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createKernel, type Kernel, type KernelLogRecord, PluginPool } from "../../src/index.ts";
import type { AcquireOptions, PoolOwner } from "../../src/plugins/pool.ts";
import { MODEL_WORKER_LIMITS } from "../../src/plugins/providers.ts";
import { calls, FIXTURES, reply, tool } from "../loop/harness.ts";

let root: string;
let project: string;
let scripts: string;
let logs: string;
let cacheDir: string;
const kernels: Kernel[] = [];

/** A first-party package `providers/<name>` whose entry logs its start, then runs `fixture`. */
function provider(name: string, fixture: string, version = "1.0.0", delayMs = 0): void {
  const dir = join(root, "providers", name);
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `test-${name}`, version, type: "module" }));
  writeFileSync(
    join(dir, "src", "main.ts"),
    [
      'import { appendFileSync } from "node:fs";',
      `appendFileSync(${JSON.stringify(join(root, "starts.log"))}, ${JSON.stringify(`${name} `)} + Date.now() + "\\n");`,
      ...(delayMs > 0 ? [`await new Promise((r) => setTimeout(r, ${delayMs}));`] : []),
      `await import(${JSON.stringify(pathToFileURL(fixture).href)});`,
      "",
    ].join("\n"),
  );
}

/** A first-party provider's real entry, run through provider() so its starts are counted. */
const firstParty = (name: string) =>
  join(import.meta.dirname, "..", "..", "..", "..", "providers", name, "src", "main.ts");

const startLines = (): string[] => readFileSync(join(root, "starts.log"), "utf8").split("\n").filter(Boolean);

/** When each provider logged its start (ms since the epoch), by name. */
const startTimes = (): Record<string, number> =>
  Object.fromEntries(startLines().map((l) => [l.split(" ")[0]!, Number(l.split(" ")[1])]));

const starts = (): string[] => {
  try {
    return startLines().map((l) => l.split(" ")[0]!);
  } catch {
    return [];
  }
};

const invocations = (): Array<Record<string, unknown>> => {
  try {
    return readFileSync(join(logs, "invocations.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
};

async function kernel(
  logsInto: KernelLogRecord[] = [],
  pool?: PluginPool,
  env: Record<string, string> = {},
): Promise<Kernel> {
  const k = await createKernel({
    ...(pool ? { pool } : {}),
    projectDir: project,
    installationRoot: root,
    env: { HOME: root, ...env },
    stateDir: join(root, "state"),
    globalConfig: false,
    describeCache: cacheDir,
    tokenCountCache: false,
    bundles: false,
    durability: "normal",
    logSink: (r) => logsInto.push(r),
  });
  kernels.push(k);
  return k;
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "ph-lazy-"));
  project = join(root, "project");
  scripts = join(root, "scripts");
  logs = join(root, "logs");
  cacheDir = join(root, "cache", "describe");
  for (const d of [project, scripts, logs]) mkdirSync(d, { recursive: true });
  provider("anthropic", FIXTURES.model);
  provider("filesystem", FIXTURES.tools);
  provider("project-context", FIXTURES.context);
  writeFileSync(
    join(project, "agent.hcl"),
    `required_providers {
  model   = { source = "pluggableharness/anthropic", version = ">= 0.0.0" }
  tools   = { source = "pluggableharness/filesystem", version = ">= 0.0.0" }
  context = { source = "pluggableharness/project-context", version = ">= 0.0.0" }
}
provider "model" {
  script_dir = ${JSON.stringify(scripts)}
}
provider "tools" {
  log_dir = ${JSON.stringify(logs)}
}
provider "context" {
  label    = "Notes"
  text     = "project notes"
  log_file = ${JSON.stringify(join(logs, "context.jsonl"))}
}
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*"]
}
# The fixture tools log outside the project; the sandbox has its own tests.
settings {
  sandbox = "off"
}
`,
  );
  writeFileSync(
    join(scripts, "lazy.json"),
    JSON.stringify({ turns: [calls(tool("c1", "tools__read", { path: "a.txt" })), reply("done")] }),
  );
});

afterEach(async () => {
  for (const k of kernels.splice(0)) await k.shutdown().catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

async function runOnce(k: Kernel): Promise<SessionStatus> {
  const h = await k.startSession({ prompt: "[lazy] read a.txt" });
  return h.idle();
}

describe("the describe cache and lazy launch", () => {
  it("launches every provider on a cold cache and stores their descriptions", async () => {
    const k = await kernel();
    expect(starts().sort()).toEqual(["anthropic", "filesystem", "project-context"]);
    expect(readdirSync(cacheDir).filter((f) => f.endsWith(".json"))).toHaveLength(3);
    expect(await runOnce(k)).toBe(SessionStatus.COMPLETED);
    expect(starts()).toHaveLength(3);
  });

  it("with a warm cache, starts nothing until a session needs it, and configures each before its first call", async () => {
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));

    const k = await kernel();
    expect(starts()).toEqual([]);
    expect(k.listProviders().map((p) => [p.name, p.state])).toEqual([
      ["context", "loaded"],
      ["model", "loaded"],
      ["tools", "loaded"],
    ]);

    // A session starts its model provider (routing needs it configured) and its context provider.
    const h = await k.startSession();
    expect(starts()).toContain("anthropic");
    expect(starts()).not.toContain("filesystem");
    expect(h.tools().map((t) => t.name)).toContain("tools__read");

    // The first tool call starts the tool provider; its invocation log only exists once
    // Configure (which names the log directory) reached it before the call.
    h.send("[lazy] read a.txt");
    expect(await h.idle()).toBe(SessionStatus.COMPLETED);
    expect(starts().filter((s) => s === "filesystem")).toHaveLength(1);
    expect(
      invocations()
        .filter((e) => e["phase"] === "start")
        .map((e) => e["tool"]),
    ).toEqual(["read"]);
    expect(readFileSync(join(logs, "context.jsonl"), "utf8").length).toBeGreaterThan(0);
  });

  it("a dormant tool provider starts when the model begins a call to it, while the answer still streams", async () => {
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));
    // The answer holds after the call's start until the tool plugin has been started: without
    // the early start it would only start once the answer is complete, so the hold times out.
    const started = { waitFor: { file: join(root, "starts.log"), text: "filesystem", timeoutMs: 15_000 } };
    const [call] = calls(tool("c1", "tools__read", { path: "a.txt" })).events;
    writeFileSync(
      join(scripts, "early.json"),
      JSON.stringify({ turns: [{ events: [call, started, { stop: "tool_use" }] }, reply("done")] }),
    );
    const k = await kernel();
    const h = await k.startSession({ prompt: "[early] read a.txt" });
    expect(await h.idle()).toBe(SessionStatus.COMPLETED);
    expect(starts().filter((s) => s === "filesystem")).toHaveLength(1);
    expect(invocations().filter((e) => e["phase"] === "start")).toHaveLength(1);
  });

  it("a model provider known from the cache gets the model worker's larger young generation", async () => {
    await (await kernel()).shutdown();
    const seen = new Map<string, AcquireOptions>();
    class RecordingPool extends PluginPool {
      override acquire(name: string, command: string, owner: PoolOwner, options: AcquireOptions = {}) {
        seen.set(name, options);
        return super.acquire(name, command, owner, options);
      }
    }
    const pool = new RecordingPool();
    const k = await kernel([], pool);
    expect(seen.get("model")?.resourceLimits).toEqual(MODEL_WORKER_LIMITS);
    expect(MODEL_WORKER_LIMITS.maxYoungGenerationSizeMb).toBeGreaterThan(2);
    // Tool and context workers keep the small default.
    expect(seen.get("tools")?.resourceLimits).toBeUndefined();
    expect(seen.get("context")?.resourceLimits).toBeUndefined();
    await k.shutdown();
    await pool.shutdown();
  });

  it("a provider that is never used is never started", async () => {
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));
    writeFileSync(join(scripts, "talk.json"), JSON.stringify({ turns: [reply("hello")] }));
    const k = await kernel();
    const h = await k.startSession({ prompt: "[talk] hi" });
    expect(await h.idle()).toBe(SessionStatus.COMPLETED);
    expect(starts().sort()).toEqual(["anthropic", "project-context"]);
  });

  it("a changed package misses the cache: it is launched at start and its stale entry is replaced", async () => {
    await (await kernel()).shutdown();
    const before = readdirSync(cacheDir).sort();
    rmSync(join(root, "starts.log"));

    appendFileSync(join(root, "providers", "filesystem", "src", "main.ts"), "// changed\n");
    const k = await kernel();
    expect(starts()).toEqual(["filesystem"]);
    const after = readdirSync(cacheDir).sort();
    expect(after).toHaveLength(3);
    expect(after.filter((f) => !before.includes(f))).toHaveLength(1);
    expect(await runOnce(k)).toBe(SessionStatus.COMPLETED);
  });

  it("an unreadable entry is a miss, and describeCache: false launches everything", async () => {
    await (await kernel()).shutdown();
    for (const f of readdirSync(cacheDir)) writeFileSync(join(cacheDir, f), "{ not json");
    rmSync(join(root, "starts.log"));
    await kernel();
    expect(starts()).toHaveLength(3);

    rmSync(join(root, "starts.log"));
    const eager = await createKernel({
      projectDir: project,
      installationRoot: root,
      env: { HOME: root },
      stateDir: join(root, "state"),
      globalConfig: false,
      describeCache: false,
      tokenCountCache: false,
      bundles: false,
    });
    kernels.push(eager);
    expect(starts()).toHaveLength(3);
  });

  it("judges unknown models once the model provider is configured, at start or at activation", async () => {
    const hcl = join(project, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8").replace(
        '      id       = "alpha"\n    }',
        '      id       = "alpha"\n    }\n    fallback {\n      provider = "model"\n      id       = "zeta"\n    }',
      ),
    );
    const unknown = (records: KernelLogRecord[]) =>
      records.filter((r) => r.level === "warn" && r.message.includes("zeta"));
    const cold: KernelLogRecord[] = [];
    await (await kernel(cold)).shutdown();
    expect(unknown(cold)).toHaveLength(1);

    const warm: KernelLogRecord[] = [];
    const k = await kernel(warm);
    expect(unknown(warm)).toHaveLength(0);
    await k.startSession();
    expect(unknown(warm)).toHaveLength(1);
  });

  it("a frontend plugin is launched and configured at start even from a warm cache", async () => {
    // The real web-ui plugin: it serves its UI from Configure on, and no session call would
    // ever wake it. Left dormant, a warm cache meant `agent serve` never served the web UI.
    provider("web-ui", firstParty("web-ui"));
    const hcl = join(project, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8")
        .replace(
          "required_providers {",
          'required_providers {\n  web = { source = "pluggableharness/web-ui", version = ">= 0.0.0" }',
        )
        .concat('provider "web" {\n  token = env("WEB_TOKEN")\n}\n'),
    );
    const listening = (records: KernelLogRecord[]) =>
      records.filter((r) => r.message.includes("web UI listening on http://127.0.0.1:"));
    const start = async (records: KernelLogRecord[]) => {
      const k = await createKernel({
        projectDir: project,
        installationRoot: root,
        env: { HOME: root, WEB_TOKEN: "frontend-token-0123456789" },
        stateDir: join(root, "state"),
        globalConfig: false,
        describeCache: cacheDir,
        tokenCountCache: false,
        bundles: false,
        logSink: (r) => records.push(r),
      });
      kernels.push(k);
      // The plugin's log line travels over its stderr: give it a moment after the start.
      for (let i = 0; i < 200 && listening(records).length === 0; i++)
        await new Promise((r) => setTimeout(r, 25));
      return k;
    };
    const cold: KernelLogRecord[] = [];
    await (await start(cold)).shutdown();
    expect(listening(cold)).toHaveLength(1);
    rmSync(join(root, "starts.log"));

    const warm: KernelLogRecord[] = [];
    await start(warm);
    expect(starts()).toEqual(["web-ui"]);
    expect(listening(warm)).toHaveLength(1);
    expect(JSON.stringify(warm)).not.toContain("frontend-token-0123456789");
  });

  it("bridges whose operations come from their configuration alone stay dormant on a warm cache until used", async () => {
    // The real agent and commands providers (operations_cacheable): before their
    // post-Configure answers were cached, both were launched at every start, and the first
    // request waited for them.
    for (const name of ["agent", "commands"]) provider(name, firstParty(name));
    const commandsDir = join(project, "cmds");
    mkdirSync(commandsDir);
    writeFileSync(join(commandsDir, "hello.md"), "---\ndescription: Say hello\n---\nSay hello to {1}\n");
    const hcl = join(project, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8")
        .replace(
          "required_providers {",
          `required_providers {
  agent    = { source = "pluggableharness/agent", version = ">= 0.0.0" }
  commands = { source = "pluggableharness/commands", version = ">= 0.0.0" }`,
        )
        .replace('tools = ["tools.*"]', 'tools = ["tools.*", "agent.*"]')
        .concat(`provider "agent" {
  profiles = { helper = "answers small questions" }
}
provider "commands" {
  directories = [${JSON.stringify(commandsDir)}]
}
agent_profile "helper" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*"]
}
policy "allow_all" {
  match  = { kind = "resource" }
  action = "allow"
}
`),
    );
    writeFileSync(
      join(scripts, "spawn.json"),
      JSON.stringify({
        turns: [
          calls(tool("s1", "agent__spawn_subagent", { profile: "helper", prompt: "[child] say hi" })),
          reply("done"),
        ],
      }),
    );
    writeFileSync(join(scripts, "child.json"), JSON.stringify({ turns: [reply("hi from the child")] }));

    // Cold: everything is launched and described; the bridges' configured answers are kept.
    await (await kernel()).shutdown();
    expect(starts()).toEqual(expect.arrayContaining(["agent", "commands"]));
    rmSync(join(root, "starts.log"));

    const warm: KernelLogRecord[] = [];
    const k = await kernel(warm);
    expect(starts()).toEqual([]);
    const h = await k.startSession();
    expect(starts()).not.toContain("agent");
    expect(starts()).not.toContain("commands");
    // Declared from the kept answer: the spawn tool lists the configured profile.
    const spawn = h.toolDefinitions().find((t) => t.name === "agent__spawn_subagent");
    expect(JSON.stringify(spawn?.inputSchema)).toContain("helper");
    expect(k.listProviders().find((p) => p.name === "commands")?.state).toBe("loaded");

    // The model calls the spawn tool: the agent provider starts then, configured, and the
    // child session runs.
    h.send("[spawn] ask a helper");
    expect(await h.idle()).toBe(SessionStatus.COMPLETED);
    expect(starts().filter((s) => s === "agent")).toHaveLength(1);
    expect(starts()).not.toContain("commands");
    const parent = readFileSync(join(scripts, "spawn.requests.jsonl"), "utf8").trim().split("\n");
    expect(parent).toHaveLength(2);
    expect(parent[1]).toContain("hi from the child");
    expect(warm.some((r) => r.message.includes("other operations"))).toBe(false);

    // A new command file changes the commands provider's sources: the next start asks it.
    await k.shutdown();
    rmSync(join(root, "starts.log"));
    writeFileSync(join(commandsDir, "bye.md"), "---\ndescription: Say bye\n---\nSay bye\n");
    await kernel();
    expect(starts()).toEqual(["commands"]);
  });

  it("a bridge's kept operations belong to its project: another project with the same block asks it", async () => {
    // The commands provider reads `.agent/commands` of the project it runs in by default, so
    // the same (empty) configuration means other commands in another project. Its kept
    // answer from a project without commands once hid a project's /review (pty-commands).
    provider("commands", firstParty("commands"));
    const hcl = join(project, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8").replace(
        "required_providers {",
        'required_providers {\n  commands = { source = "pluggableharness/commands", version = ">= 0.0.0" }',
      ),
    );
    // Project A, no commands of its own: cold, then warm (dormant).
    await (await kernel()).shutdown();
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));
    await (await kernel()).shutdown();
    expect(starts()).toEqual([]);
    // Project B: the same agent.hcl and lock, and a command file.
    const other = join(root, "project-b");
    cpSync(project, other, { recursive: true });
    mkdirSync(join(other, ".agent", "commands"), { recursive: true });
    writeFileSync(join(other, ".agent", "commands", "audit.md"), "---\ndescription: Audit\n---\nAudit {1}\n");
    project = other;
    // Asked in B, whose commands it then offers (B's own answer is kept from now on).
    await (await kernel()).shutdown();
    expect(starts()).toEqual(["commands"]);
  });

  it("a cacheable bridge given a secret is asked at every start, and nothing it answered is kept", async () => {
    // Any first-party name serves: the package under the scratch root runs the fixture.
    provider("search", join(import.meta.dirname, "fixtures", "keyed-bridge.ts"));
    const hcl = join(project, "agent.hcl");
    const base = readFileSync(hcl, "utf8").replace(
      "required_providers {",
      'required_providers {\n  keyed = { source = "pluggableharness/search", version = ">= 0.0.0" }',
    );
    writeFileSync(
      hcl,
      `${base}provider "keyed" {\n  operation = "find"\n  token     = env("KEYED_TOKEN")\n}\n`,
    );
    const withToken = (token: string) => kernel([], undefined, { KEYED_TOKEN: token });
    const kept = () => {
      const dir = `${cacheDir}.operations`;
      return existsSync(dir) ? readdirSync(dir).filter((f) => f.includes("search")) : [];
    };
    await (await withToken("secret-one-0123456789")).shutdown();
    await (await withToken("secret-one-0123456789")).shutdown();
    expect(kept()).toEqual([]);
    rmSync(join(root, "starts.log"));
    // Another secret, the same accepted digest: the bridge is asked again, not trusted.
    await (await withToken("secret-two-0123456789")).shutdown();
    expect(starts()).toEqual(["search"]);

    // Without the secret the same bridge is kept, and a warm start leaves it dormant.
    writeFileSync(hcl, `${base}provider "keyed" {\n  operation = "find"\n}\n`);
    await (await kernel()).shutdown();
    expect(kept()).toHaveLength(1);
    rmSync(join(root, "starts.log"));
    const k = await kernel();
    expect(starts()).toEqual([]);
    expect(k.listProviders().find((p) => p.name === "keyed")?.state).toBe("loaded");
  });

  it("a session starts its memory provider with its model provider, before the first turn recalls", async () => {
    provider("memory", FIXTURES.memory);
    const hcl = join(project, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8")
        .replace(
          "required_providers {",
          'required_providers {\n  memory = { source = "pluggableharness/memory", version = ">= 0.0.0" }',
        )
        .concat(
          `provider "memory" {\n  id       = "m1"\n  text     = "remembered"\n  log_file = ${JSON.stringify(join(logs, "memory.jsonl"))}\n}\n`,
        ),
    );
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));
    const k = await kernel();
    expect(starts()).toEqual([]);
    // Started alongside the model provider: its launch no longer follows it on the way to
    // the first request (the first turn's context assembly recalls from it).
    await k.startSession();
    for (let i = 0; i < 200 && !starts().includes("memory"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(starts()).toContain("memory");
    expect(starts()).not.toContain("filesystem");
  });

  it("behind a painted prompt (contextAfterModel), context providers start after the model provider", async () => {
    await (await kernel()).shutdown();
    // The model provider now takes a second to start after logging its launch.
    provider("anthropic", FIXTURES.model, "1.0.0", 1_000);
    rmSync(join(cacheDir, ".."), { recursive: true, force: true });
    await (await kernel()).shutdown();
    rmSync(join(root, "starts.log"));
    const k = await kernel();
    await k.startSession({ contextAfterModel: true });
    for (let i = 0; i < 200 && !starts().includes("project-context"); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(starts()).toEqual(["anthropic", "project-context"]);
    // Started alongside, the context provider would have logged its start during that second.
    const t = startTimes();
    expect(t["project-context"]! - t["anthropic"]!).toBeGreaterThanOrEqual(950);
    // Without the option they start together, as `agent run -p` wants.
    await k.shutdown();
    rmSync(join(root, "starts.log"));
    await (await kernel()).startSession();
    expect(starts()).toContain("project-context");
  });

  it("a provider that describes itself differently once started drops its cache entry", async () => {
    await (await kernel()).shutdown();
    // Same package checksum, another identity: only a launch can tell.
    const file = join(cacheDir, readdirSync(cacheDir).find((f) => f.includes("filesystem"))!);
    const entry = JSON.parse(readFileSync(file, "utf8")) as { producers: Record<string, string> };
    const ref = fromBinary(ProducerRefSchema, Buffer.from(entry.producers["tool"]!, "base64"));
    ref.version = "0.0.1-stale";
    entry.producers["tool"] = Buffer.from(toBinary(ProducerRefSchema, ref)).toString("base64");
    writeFileSync(file, JSON.stringify(entry));

    const records: KernelLogRecord[] = [];
    const k = await kernel(records);
    expect(existsSync(file)).toBe(true);
    expect(await runOnce(k)).toBe(SessionStatus.COMPLETED);
    expect(existsSync(file)).toBe(false);
    expect(records.some((r) => r.level === "warn" && r.message.includes("differently"))).toBe(true);
  });
});
