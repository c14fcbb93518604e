// Real plugin subprocesses through the whole lifecycle: launch, discovery, calls,
// kernel callbacks over the broker, stdio, shutdown, crashes and relaunch.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { ModelService } from "@pluggableharness/protocol/model";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CrashReport,
  livePluginPids,
  PluginCrashedError,
  PluginHost,
  type PluginHostOptions,
  toolErrorFor,
} from "../src/index.ts";
import { collectLogs, fixture, isAlive, type RecordedCall, recordingCallbacks, waitGone } from "./helpers.ts";

const hosts: PluginHost[] = [];
function host(opts: Partial<PluginHostOptions> & { command: string }): PluginHost {
  const h = new PluginHost({ name: "tools", launchTimeoutMs: 15_000, ...opts });
  hosts.push(h);
  return h;
}

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("a TypeScript plugin under the launcher", () => {
  it("launches, reports its identity and serves unary and streaming calls", async () => {
    const h = host({ command: fixture("tool-plugin.ts") });
    const description = await h.describe();
    expect(description.categories).toEqual(["tool"]);
    expect(description.producers["tool"]).toMatchObject({
      name: "test-tools",
      version: "1.2.3",
      source: "example.com/fixtures/test-tools",
      category: PluginCategory.TOOL,
      protocolVersion: 1,
    });
    expect(h.protocolVersion).toBe(1);

    const tools = h.client(ToolService);
    const schema = await tools.getSchema({});
    expect(schema.tools.map((t) => t.name)).toContain("count");

    const events = await collect(tools.invoke({ call: { toolName: "count", arguments: { n: 5 } } }));
    expect(events.map((e) => e.event?.event.case)).toEqual([
      "outputChunk",
      "outputChunk",
      "outputChunk",
      "outputChunk",
      "outputChunk",
      "result",
    ]);
    const last = events.at(-1)!.event!.event;
    expect(last.case === "result" && last.value.payload).toEqual({ count: 5 });
  });

  it("discovers every category a multi-category plugin serves", async () => {
    const h = host({ command: fixture("multi-plugin.ts") });
    const description = await h.describe();
    expect(description.categories).toEqual(["model", "tool"]);
    expect(description.producers["model"]?.category).toBe(PluginCategory.MODEL);
    expect(description.producers["tool"]?.category).toBe(PluginCategory.TOOL);
    const text = [];
    for await (const ev of h.client(ModelService).streamCompletion({ modelId: "m" })) {
      if (ev.event.case === "textDelta") text.push(ev.event.value.text);
    }
    expect(text.join("")).toBe("hello world");
  });

  it("serves kernel callbacks over the broker, attributing each call to its connection", async () => {
    const calls: RecordedCall[] = [];
    const a = host({
      name: "alpha",
      command: fixture("tool-plugin.ts"),
      callbacks: recordingCallbacks(calls),
    });
    const b = host({
      name: "beta",
      command: fixture("tool-plugin.ts"),
      callbacks: recordingCallbacks(calls),
    });
    const invoke = async (h: PluginHost, session: string) => {
      const events = await collect(
        h.client(ToolService).invoke({ call: { toolName: "emit", callContext: { sessionId: session } } }),
      );
      const ev = events.at(-1)!.event!.event;
      if (ev.case !== "result") throw new Error(`expected a result, got ${ev.case}`);
      return ev.value.payload!;
    };
    const [ra, rb] = await Promise.all([invoke(a, "session-a"), invoke(b, "session-b")]);
    expect(ra).toEqual({ id: "evt-alpha-1", sequence: 1, tokens: 42 });
    expect(rb).toEqual({ id: "evt-beta-1", sequence: 1, tokens: 42 });
    const byPlugin = (p: string) => calls.filter((c) => c.peer.plugin === p);
    expect(byPlugin("alpha").map((c) => c.method)).toEqual(["emit", "log", "countTokens", "runSession"]);
    expect(byPlugin("beta").map((c) => c.method)).toEqual(["emit", "log", "countTokens", "runSession"]);
    // The SDK filled the session from the call being served.
    expect(byPlugin("alpha").find((c) => c.method === "emit")?.sessionId).toBe("session-a");
    expect(byPlugin("beta").find((c) => c.method === "log")?.sessionId).toBe("session-b");
    expect(byPlugin("alpha").find((c) => c.method === "runSession")?.sessionId).toBe("session-a");
    // The peer also carries the plugin's Describe identity, learned at launch.
    expect(byPlugin("alpha")[0]!.peer.producers.get("tool")?.name).toBe("test-tools");
    expect(byPlugin("alpha")[0]!.peer.pid).toBe(a.pid);
  });

  it("cancels a server stream from the kernel as ordinary control flow in the plugin", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ph-cancel-"));
    try {
      const marker = join(dir, "marker");
      const h = host({ command: fixture("tool-plugin.ts") });
      const ac = new AbortController();
      const seen: string[] = [];
      const run = (async () => {
        for await (const ev of h
          .client(ToolService)
          .invoke({ call: { toolName: "hang", arguments: { marker } } }, { signal: ac.signal })) {
          seen.push(ev.event?.event.case ?? "");
          ac.abort();
        }
      })();
      await expect(run).rejects.toMatchObject({ name: "AbortError" });
      expect(seen).toEqual(["progress"]);
      const end = Date.now() + 3_000;
      while (!existsSync(marker) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(readFileSync(marker, "utf8")).toBe("cancelled");
      // The plugin is still healthy afterwards.
      expect((await h.client(ToolService).getSchema({})).tools.length).toBeGreaterThan(0);
      expect(h.crashCount).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("delivers plugin stderr and stdout as log lines attributed to the plugin", async () => {
    const logs = collectLogs();
    const h = host({ name: "chatty", command: fixture("tool-plugin.ts"), logSink: logs.sink });
    await collect(h.client(ToolService).invoke({ call: { toolName: "print" } }));
    const end = Date.now() + 2_000;
    while (!logs.records.some((r) => r.source === "stdio") && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const serving = logs.records.find((r) => r.message === "plugin serving");
    expect(serving).toMatchObject({ plugin: "chatty", source: "stderr", level: "debug", structured: true });
    expect(serving?.logger).toBe("test-tools");
    expect(logs.records.find((r) => r.source === "stdio")).toMatchObject({
      plugin: "chatty",
      message: "hello from the plugin's stdout",
      level: "info",
    });
  });

  it("shuts down gracefully, removes its socket and leaves no process behind", async () => {
    const h = host({ command: fixture("tool-plugin.ts"), shutdownGraceMs: 5_000 });
    await h.start();
    const pid = h.pid!;
    const socket = h.address!;
    const events = await collect(h.client(ToolService).invoke({ call: { toolName: "spawn_child" } }));
    const ev = events.at(-1)!.event!.event;
    const grandchild = ev.case === "result" ? Number(ev.value.payload!["pid"]) : -1;
    expect(isAlive(grandchild)).toBe(true);
    const t0 = Date.now();
    await h.shutdown();
    // Graceful: the plugin exited on GRPCController.Shutdown, well within the grace period.
    expect(Date.now() - t0).toBeLessThan(4_000);
    expect(await waitGone(pid)).toBe(true);
    expect(await waitGone(grandchild)).toBe(true);
    expect(existsSync(dirname(socket))).toBe(false);
    expect(livePluginPids()).not.toContain(pid);
  });

  it("leaves no plugin behind when the kernel itself is killed with SIGKILL", async () => {
    const kernel = spawn(process.execPath, [fixture("kernel-stub.ts")], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        kernel.stdout!.once("data", (c: Buffer) => resolve(Number(c.toString().trim())));
        kernel.once("exit", (code) => reject(new Error(`kernel stub exited with ${code}`)));
      });
      expect(isAlive(pid)).toBe(true);
      kernel.kill("SIGKILL");
      // The SDK notices its parent is gone (polled each second) and exits.
      expect(await waitGone(pid, 5_000)).toBe(true);
    } finally {
      kernel.kill("SIGKILL");
    }
  });

  it("fails an in-flight stream within 1 s of kill -9 with a classified error, then relaunches", async () => {
    const reports: CrashReport[] = [];
    const h = host({ command: fixture("tool-plugin.ts"), onCrash: (r) => reports.push(r) });
    await h.start();
    const firstPid = h.pid!;
    let killedAt = 0;
    const consume = (async () => {
      for await (const _ of h
        .client(ToolService)
        .invoke({ call: { toolName: "count", arguments: { n: 10_000, delayMs: 20 } } })) {
        if (killedAt === 0) {
          killedAt = Date.now();
          process.kill(firstPid, "SIGKILL");
        }
      }
    })();
    const err = await consume.then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsed = Date.now() - killedAt;
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect(err).toMatchObject({
      code: "process_crashed",
      kind: "exited",
      signal: "SIGKILL",
      plugin: "tools",
    });
    expect(elapsed).toBeLessThan(1_000);
    expect(toolErrorFor(err)).toMatchObject({ category: 8, retryable: true });

    // The next call relaunches a fresh process.
    const schema = await h.client(ToolService).getSchema({});
    expect(schema.tools.length).toBeGreaterThan(0);
    expect(h.pid).toBeDefined();
    expect(h.pid).not.toBe(firstPid);
    expect(h.crashCount).toBe(1);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ plugin: "tools", consecutive: 1, crashCount: 1, repeated: false });
    expect(isAlive(firstPid)).toBe(false);
  });

  it("treats a dropped connection from a live process as a crash and kills the process", async () => {
    const h = host({ command: fixture("dropper-plugin.ts") });
    await h.start();
    const pid = h.pid!;
    const seen: string[] = [];
    const t0 = Date.now();
    const err = await (async () => {
      for await (const ev of h.client(ToolService).invoke({ call: { toolName: "x" } })) {
        seen.push(ev.event?.event.case ?? "");
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["progress"]);
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect(err).toMatchObject({ kind: "connection_lost" });
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(await waitGone(pid)).toBe(true);
    expect(h.crashCount).toBe(1);
  });

  it("fails unary calls of a plugin that exits by itself, and reports repeated crashes", async () => {
    const reports: CrashReport[] = [];
    const h = host({
      command: fixture("tool-plugin.ts"),
      onCrash: (r) => reports.push(r),
      backoff: { initialMs: 10, repeatedThreshold: 2 },
    });
    for (let i = 0; i < 2; i++) {
      const err = await collect(
        h.client(ToolService).invoke({ call: { toolName: "exit", arguments: { code: 3 } } }),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PluginCrashedError);
      expect(err).toMatchObject({ exitCode: 3, signal: null });
    }
    expect(h.crashCount).toBe(2);
    expect(reports.map((r) => [r.consecutive, r.repeated])).toEqual([
      [1, false],
      [2, true],
    ]);
    // Relaunch after two crashes in a row waits for the backoff (10 ms here).
    expect(reports[1]!.nextDelayMs).toBeGreaterThan(0);
    expect(reports[1]!.nextDelayMs).toBeLessThanOrEqual(10);
    expect((await h.client(ToolService).getSchema({})).tools.length).toBeGreaterThan(0);
  });
});

describe("environment isolation", () => {
  it("keeps the kernel's environment away from the plugin except for the allowlist", async () => {
    process.env["PH_CANARY_SECRET"] = "canary-7f3a";
    process.env["PH_PASSED"] = "visible";
    try {
      const h = host({
        command: fixture("tool-plugin.ts"),
        env: { passthrough: ["PH_PASSED"], set: { PH_SET: "from-config" } },
      });
      const events = await collect(h.client(ToolService).invoke({ call: { toolName: "env" } }));
      const ev = events.at(-1)!.event!.event;
      const env = (ev.case === "result" ? ev.value.payload!["env"] : {}) as Record<string, string>;
      expect(env["PH_CANARY_SECRET"]).toBeUndefined();
      expect(JSON.stringify(env)).not.toContain("canary-7f3a");
      expect(env["PH_PASSED"]).toBe("visible");
      expect(env["PH_SET"]).toBe("from-config");
      // The host's own Node, for bundled-script plugins' launchers (a path, not a secret).
      expect(env["AGENT_NODE"]).toBe(process.execPath);
      const allowed = new Set([
        "AGENT_NODE",
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PH_PASSED",
        "PH_SET",
        "NODE_COMPILE_CACHE",
      ]);
      const unexpected = Object.keys(env).filter(
        (k) => !allowed.has(k) && !k.startsWith("PLUGIN_") && k !== "PLUGGABLEHARNESS_PLUGIN",
      );
      expect(unexpected).toEqual([]);
    } finally {
      delete process.env["PH_CANARY_SECRET"];
      delete process.env["PH_PASSED"];
    }
  });
});
