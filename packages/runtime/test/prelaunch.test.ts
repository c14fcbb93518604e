// Prelaunch: a plan records what a launch spawned (without inherited values), a plan whose
// watched file changed is ignored, a prelaunched process is adopted by the launch that
// would have spawned exactly it (same process, working calls), and a process nobody
// adopts is killed.
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  discardPrelaunched,
  PluginHost,
  type PluginTransportHost,
  prelaunch,
  prelaunchedCount,
  prelaunchPlanFile,
  readPrelaunchPlan,
  WorkerPluginHost,
  writePrelaunchPlan,
} from "../src/index.ts";
import { fixture, type RecordedCall, recordingCallbacks, waitGone } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-prelaunch-"));
const hosts: PluginTransportHost[] = [];
afterEach(async () => {
  discardPrelaunched();
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function host(command: string, calls?: RecordedCall[]): PluginHost {
  const h = new PluginHost({
    name: "tools",
    command,
    launchTimeoutMs: 15_000,
    nodeCompileCache: false,
    ...(calls ? { callbacks: recordingCallbacks(calls) } : {}),
  });
  hosts.push(h);
  return h;
}

/** A plan made from what a real launch of `command` spawned. */
async function planFor(command: string, watched: string): Promise<string> {
  const first = host(command);
  await first.start();
  const spawned = first.lastSpawn!;
  await first.shutdown();
  const file = join(dir, `plan-${Math.random().toString(36).slice(2)}.json`);
  writePrelaunchPlan(file, [watched], [spawned]);
  return file;
}

describe("prelaunch", () => {
  it("records the launch without inherited values and the socket directory", async () => {
    const watched = join(dir, "agent.hcl");
    writeFileSync(watched, "# config\n");
    const first = host(fixture("tool-plugin.ts"));
    await first.start();
    const spawned = first.lastSpawn!;
    await first.shutdown();
    const file = join(dir, "plan-recorded.json");
    writePrelaunchPlan(file, [watched], [spawned]);
    const text = readFileSync(file, "utf8");
    const plan = JSON.parse(text) as {
      plugins: Array<{ env: Record<string, string | null>; args: string[] }>;
    };
    expect(plan.plugins).toHaveLength(1);
    expect(plan.plugins[0]!.args.at(-1)).toBe(fixture("tool-plugin.ts"));
    expect(plan.plugins[0]!.env["PATH"]).toBeNull();
    expect(plan.plugins[0]!.env["PLUGIN_UNIX_SOCKET_DIR"]).toBeUndefined();
    expect(plan.plugins[0]!.env["PLUGIN_PROTOCOL_VERSIONS"]).toBe("1");
    expect(text).not.toContain(process.env["PATH"]!);
    // The launch credentials by name only: each prelaunch makes its own.
    expect(plan.plugins[0]!.env["PLUGIN_CLIENT_CERT"]).toBeNull();
    expect(plan.plugins[0]!.env["PLUGGABLEHARNESS_KERNEL_TOKEN"]).toBeNull();
    expect(text).not.toContain(spawned.env["PLUGGABLEHARNESS_KERNEL_TOKEN"]!);
    expect(text).not.toContain(spawned.env["PLUGIN_CLIENT_CERT"]!.split("\n")[1]!);
  });

  it("hands a prelaunched process to the launch that would have spawned it", async () => {
    const watched = join(dir, "adopt.hcl");
    writeFileSync(watched, "# config\n");
    const plan = readPrelaunchPlan(await planFor(fixture("tool-plugin.ts"), watched))!;
    expect(prelaunch(plan, process.env)).toBe(1);
    expect(prelaunchedCount()).toBe(1);

    const calls: RecordedCall[] = [];
    const h = host(fixture("tool-plugin.ts"), calls);
    await h.start();
    expect(prelaunchedCount()).toBe(0);
    const schema = await h.client(ToolService).getSchema({});
    expect(schema.tools.length).toBeGreaterThan(0);
    // Its credentials are the launch's: AutoMTLS both ways, kernel callbacks included.
    for await (const _ of h
      .client(ToolService)
      .invoke({ call: { toolName: "emit", callContext: { sessionId: "s" } } })) {
      // drain
    }
    expect(calls.map((c) => c.method)).toContain("emit");
    // The adopted process is the launcher's own now: shutdown stops it.
    const pid = h.pid!;
    await h.shutdown();
    expect(await waitGone(pid)).toBe(true);
  });

  it("kills what nobody adopts, and ignores a plan whose watched file changed", async () => {
    const watched = join(dir, "changed.hcl");
    writeFileSync(watched, "# config\n");
    const file = await planFor(fixture("tool-plugin.ts"), watched);
    const plan = readPrelaunchPlan(file)!;
    prelaunch(plan, { ...process.env, LANG: "xx_XX.UTF-8" });
    expect(prelaunchedCount()).toBe(1);
    // A different environment: the launcher spawns its own process.
    const h = host(fixture("tool-plugin.ts"));
    await h.start();
    expect(prelaunchedCount()).toBe(1);
    discardPrelaunched();
    expect(prelaunchedCount()).toBe(0);

    const later = new Date(Date.now() + 60_000);
    utimesSync(watched, later, later);
    expect(readPrelaunchPlan(file)).toBeUndefined();
    expect(readPrelaunchPlan(join(dir, "missing.json"))).toBeUndefined();
  });

  it("prelaunches a worker-thread plugin in this process and hands it to the launch that matches", async () => {
    const watched = join(dir, "worker.hcl");
    writeFileSync(watched, "# config\n");
    const worker = () => {
      const h = new WorkerPluginHost({
        name: "tools",
        command: fixture("tool-plugin.ts"),
        nodeCompileCache: false,
      });
      hosts.push(h);
      return h;
    };
    const first = worker();
    await first.start();
    const spawned = first.lastSpawn!;
    expect(spawned.thread?.resourceLimits.maxOldGenerationSizeMb).toBeGreaterThan(0);
    await first.shutdown();
    const file = join(dir, "plan-worker.json");
    writePrelaunchPlan(file, [watched], [spawned]);
    expect(readFileSync(file, "utf8")).not.toContain(process.env["PATH"]!);
    const plan = readPrelaunchPlan(file)!;
    expect(plan.plugins[0]!.thread).toEqual(spawned.thread);

    expect(prelaunch(plan, process.env)).toBe(1);
    expect(prelaunchedCount()).toBe(1);
    const h = worker();
    await h.start();
    expect(prelaunchedCount()).toBe(0);
    expect((await h.client(ToolService).getSchema({})).tools.length).toBeGreaterThan(0);
    // Launched with other limits, the launch starts its own thread and the waiting one is discarded.
    expect(prelaunch(plan, process.env)).toBe(1);
    const other = new WorkerPluginHost({
      name: "tools",
      command: fixture("tool-plugin.ts"),
      nodeCompileCache: false,
      resourceLimits: { maxOldGenerationSizeMb: 1_024 },
    });
    hosts.push(other);
    await other.start();
    expect(prelaunchedCount()).toBe(1);
    discardPrelaunched();
    expect(prelaunchedCount()).toBe(0);
  });

  it("keys plan files by directory and the flags that choose providers", () => {
    const env = { XDG_CACHE_HOME: "/cache" };
    const a = prelaunchPlanFile(env, "/p", {});
    expect(a.startsWith("/cache/agent/prelaunch/")).toBe(true);
    expect(prelaunchPlanFile(env, "/p", {})).toBe(a);
    expect(prelaunchPlanFile(env, "/q", {})).not.toBe(a);
    expect(prelaunchPlanFile(env, "/p", { profile: "fast" })).not.toBe(a);
  });
});
