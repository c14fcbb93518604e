// First-party plugins in worker threads (WorkerPluginHost): the same lifecycle a plugin
// process has (describe, calls, kernel callbacks, logs, crashes, relaunch, onLaunch,
// shutdown), and the isolation constraint: a plugin that throws, blocks its event loop,
// exhausts its heap or never answers fails its calls as process_crashed (or by deadline)
// while this thread, the kernel's, keeps running, and it is relaunched on the next call.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type CrashReport,
  type LaunchContext,
  PluginCrashedError,
  PluginLaunchError,
  PluginStoppedError,
  RpcError,
  toolErrorFor,
  WorkerPluginHost,
  type WorkerPluginHostOptions,
} from "../src/index.ts";
import { collectLogs, fixture, type RecordedCall, recordingCallbacks } from "./helpers.ts";

const HAZARD = fixture("hazard/src/main.ts");
// One compile cache for this file's workers: each test launches fresh ones.
const compileCache = mkdtempSync(join(tmpdir(), "ph-worker-cache-"));
afterAll(() => rmSync(compileCache, { recursive: true, force: true }));
const hosts: WorkerPluginHost[] = [];
function host(opts: Partial<WorkerPluginHostOptions> & { command: string }): WorkerPluginHost {
  const h = new WorkerPluginHost({
    name: "w",
    launchTimeoutMs: 20_000,
    nodeCompileCache: compileCache,
    ...opts,
  });
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

/** Invoke of a hazard operation: resolves with the terminal event, rejects with the call's error. */
async function invoke(
  h: WorkerPluginHost,
  toolName: string,
  args: Record<string, unknown> = {},
  signal?: AbortSignal,
) {
  const events = await collect(
    h
      .client(ToolService)
      .invoke(
        { call: { id: `c-${toolName}`, toolName, arguments: args as never } },
        signal ? { signal } : {},
      ),
  );
  return events.at(-1)?.event?.event;
}

/**
 * The kernel thread's responsiveness while `run` is in progress: the largest delay of a
 * 10 ms interval timer. A plugin on the kernel's own thread would stall it for as long as
 * it blocks.
 */
async function maxTimerLag<T>(
  run: () => Promise<T>,
): Promise<{ result: PromiseSettledResult<T>; lagMs: number }> {
  let last = performance.now();
  let lagMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    lagMs = Math.max(lagMs, now - last - 10);
    last = now;
  }, 10);
  try {
    const [result] = await Promise.allSettled([run()]);
    return { result: result!, lagMs };
  } finally {
    clearInterval(timer);
  }
}

describe("a plugin in a worker thread", () => {
  it("launches, serves unary and streaming calls, and reports stdout and logs", async () => {
    const logs = collectLogs();
    const h = host({ command: fixture("tool-plugin.ts"), logSink: logs.sink });
    const d = await h.describe();
    expect(h.isolation).toBe("worker");
    expect(d.categories).toEqual(["tool"]);
    expect(d.producers["tool"]).toMatchObject({ name: "test-tools", version: "1.2.3", protocolVersion: 1 });
    expect(h.pid).toBe(process.pid);
    // What a prelaunch plan would record: the entry, the thread's limits, no kernel environment.
    expect(h.lastSpawn?.file).toBe(fixture("tool-plugin.ts"));
    expect(h.lastSpawn?.thread?.resourceLimits).toMatchObject({ maxOldGenerationSizeMb: 2_048 });

    const tools = h.client(ToolService);
    const events = await collect(tools.invoke({ call: { toolName: "count", arguments: { n: 4 } } }));
    expect(events.map((e) => e.event?.event.case)).toEqual([
      "outputChunk",
      "outputChunk",
      "outputChunk",
      "outputChunk",
      "result",
    ]);
    await collect(tools.invoke({ call: { toolName: "print" } }));
    await expect.poll(() => logs.records.some((r) => r.source === "stdout")).toBe(true);
    expect(logs.records.find((r) => r.source === "stdout")?.message).toBe("hello from the plugin's stdout");
    // The SDK's own hclog line ("plugin serving") arrived over the port, attributed.
    expect(
      logs.records.some((r) => r.source === "stderr" && r.message === "plugin serving" && r.plugin === "w"),
    ).toBe(true);
  });

  it("reaches the kernel callbacks, attributed to the call's session and this worker", async () => {
    const calls: RecordedCall[] = [];
    const h = host({ command: fixture("tool-plugin.ts"), callbacks: recordingCallbacks(calls) });
    const events = await collect(
      h.client(ToolService).invoke({ call: { toolName: "emit", callContext: { sessionId: "s-1" } } }),
    );
    expect(events.at(-1)?.event?.event.value).toMatchObject({ payload: { id: "evt-w-1", tokens: 42 } });
    expect(calls.map((c) => `${c.method}:${c.sessionId ?? ""}`)).toEqual([
      "emit:s-1",
      "log:s-1",
      "countTokens:",
      "runSession:s-1",
    ]);
    expect(calls[0]!.peer).toMatchObject({ plugin: "w", instance: 1, pid: process.pid });
    expect(calls[0]!.peer.producers.get("tool")?.name).toBe("test-tools");
    // The raw gRPC channel (FrontendService.Attach rides on it) is a socket opened on request.
    await collect(h.client(ToolService).invoke({ call: { toolName: "channel_log" } }));
    expect(calls.at(-1)).toMatchObject({ method: "log", sessionId: "via-channel", peer: { plugin: "w" } });
  });

  it("gets the allowlisted environment a process would get, never the kernel's", async () => {
    process.env["PH_WORKER_CANARY"] = "canary-must-not-leak";
    process.env["PH_WORKER_PASSED"] = "passed-on-purpose";
    try {
      const h = host({ command: HAZARD, env: { passthrough: ["PH_WORKER_PASSED"] } });
      const result = await invoke(h, "env");
      const payload = (result?.value as { payload?: { env?: string } } | undefined)?.payload;
      const env = JSON.parse(payload?.env ?? "{}") as Record<string, string>;
      expect(env["PH_WORKER_CANARY"]).toBeUndefined();
      expect(env["PH_WORKER_PASSED"]).toBe("passed-on-purpose");
      expect(env["PATH"]).toBe(process.env["PATH"]);
      expect(env["PLUGGABLEHARNESS_PLUGIN"]).toBeDefined();
      // The runtime names the Node it runs on for every plugin (bundled plugins' launchers use it).
      expect(env["AGENT_NODE"]).toBe(process.execPath);
      expect(
        Object.keys(env).filter(
          (k) => !/^(PATH|HOME|TMPDIR|LANG|PLUGIN_|PLUGGABLEHARNESS_|AGENT_NODE$)/.test(k),
        ),
      ).toEqual(["PH_WORKER_PASSED"]);
      // And the kernel's own environment is untouched by the worker's.
      expect(process.env["PLUGGABLEHARNESS_PLUGIN"]).toBeUndefined();
    } finally {
      delete process.env["PH_WORKER_CANARY"];
      delete process.env["PH_WORKER_PASSED"];
    }
  });

  it("fails the call as process_crashed when the plugin exits, reports it and relaunches with onLaunch", async () => {
    const crashes: CrashReport[] = [];
    const launches: LaunchContext[] = [];
    const h = host({
      command: fixture("tool-plugin.ts"),
      onCrash: (r) => crashes.push(r),
      onLaunch: async (l) => {
        launches.push(l);
        // What the kernel does here: Configure, on a client bound to the new worker.
        await l.client(ToolService).getSchema({});
      },
    });
    await h.start();
    const err = await collect(
      h.client(ToolService).invoke({ call: { toolName: "exit", arguments: { code: 7 } } }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect(err).toMatchObject({ code: "process_crashed", kind: "exited", exitCode: 7 });
    expect(toolErrorFor(err)?.category).toBeDefined();
    await expect.poll(() => crashes.length).toBe(1);
    expect(crashes[0]).toMatchObject({ plugin: "w", consecutive: 1, crashCount: 1 });
    expect(h.running).toBe(false);
    const schema = await h.client(ToolService).getSchema({});
    expect(schema.tools.length).toBeGreaterThan(0);
    expect(launches.map((l) => l.launch)).toEqual([1, 2]);
  });

  it("crashes on an uncaught throw from a callback and on an unhandled rejection, and relaunches", async () => {
    const logs = collectLogs();
    const h = host({ command: HAZARD, logSink: logs.sink });
    for (const [op, text] of [
      ["throw_sync", "hazard: thrown from a timer"],
      ["throw_async", "hazard: unhandled rejection"],
    ] as const) {
      const { result, lagMs } = await maxTimerLag(() => invoke(h, op));
      expect(result.status).toBe("rejected");
      const err = (result as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(PluginCrashedError);
      expect((err as PluginCrashedError).message).toContain(text);
      expect(toolErrorFor(err)).toMatchObject({ retryable: true });
      expect(lagMs).toBeLessThan(1_000);
      // The next call relaunches the worker.
      expect((await invoke(h, "ok"))?.case).toBe("result");
    }
    expect(h.crashCount).toBe(2);
    expect(
      logs.records.some((r) => r.source === "runtime" && r.message.includes("hazard: thrown from a timer")),
    ).toBe(true);
    // An error the operation reports is its own business, not a crash.
    expect((await invoke(h, "fail"))?.case).toBe("error");
    expect(h.crashCount).toBe(2);
  });

  it("stops a worker whose event loop is blocked, without stalling the kernel's thread", async () => {
    const h = host({ command: HAZARD, watchdog: { stallTimeoutMs: 600, cancelGraceMs: 300 } });
    await h.start();
    const started = Date.now();
    const { result, lagMs } = await maxTimerLag(() => invoke(h, "busy", { ms: 20_000 }));
    expect(result.status).toBe("rejected");
    const err = (result as PromiseRejectedResult).reason as PluginCrashedError;
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect(err.kind).toBe("unresponsive");
    expect(err.message).toMatch(/stopped answering: its event loop was blocked for \d+ ms/);
    // Stopped by the watchdog, long before the 20 s the loop would have run.
    expect(Date.now() - started).toBeLessThan(10_000);
    // The kernel thread kept its timers running while the plugin thread was stuck.
    expect(lagMs).toBeLessThan(1_000);
    expect((await invoke(h, "ok"))?.case).toBe("result");
  });

  it("honours a cancellation during a busy loop at once, and frees the worker soon after", async () => {
    const h = host({ command: HAZARD, watchdog: { stallTimeoutMs: 60_000, cancelGraceMs: 400 } });
    await h.start();
    const ac = new AbortController();
    const call = invoke(h, "busy", { ms: 30_000 }, ac.signal).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    const abortedAt = Date.now();
    ac.abort(new Error("interrupted by the user"));
    const err = await call;
    expect((err as Error).message).toBe("interrupted by the user");
    expect(Date.now() - abortedAt).toBeLessThan(500);
    // The cancelled call went unanswered, so the worker is ended well before its 30 s loop.
    await expect.poll(() => h.crashCount, { timeout: 10_000 }).toBe(1);
    expect((await invoke(h, "ok"))?.case).toBe("result");
  });

  it("stops a worker whose heap outgrows its limit, even by large allocations, and the kernel lives on", async () => {
    const h = host({ command: HAZARD, watchdog: { heapLimitMb: 64 } });
    await h.start();
    const { result, lagMs } = await maxTimerLag(() => invoke(h, "oom"));
    expect(result.status).toBe("rejected");
    const err = (result as PromiseRejectedResult).reason as PluginCrashedError;
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect(err.kind).toBe("out_of_memory");
    expect(err.message).toMatch(/ran out of memory: \d+ MiB of heap, over its 64 MiB limit/);
    expect(lagMs).toBeLessThan(2_000);
    expect((await invoke(h, "ok"))?.case).toBe("result");
  });

  it("is ended by V8 at its hard heap limit when it leaks by small allocations", async () => {
    const h = host({
      command: HAZARD,
      resourceLimits: { maxOldGenerationSizeMb: 48 },
      watchdog: { heapLimitMb: 100_000 },
    });
    await h.start();
    const err = await invoke(h, "leak").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect((err as PluginCrashedError).kind).toBe("out_of_memory");
    expect((err as PluginCrashedError).message).toContain("ran out of memory");
    expect((await invoke(h, "ok"))?.case).toBe("result");
  });

  it("times out a call that is never answered, as a process plugin does, and stays usable", async () => {
    const h = host({ command: HAZARD, watchdog: { stallTimeoutMs: 300, cancelGraceMs: 300 } });
    await h.start();
    const err = await collect(
      h.client(ToolService).invoke({ call: { toolName: "hang", arguments: {} } }, { timeoutMs: 300 }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect(err).toMatchObject({ status: "DEADLINE_EXCEEDED" });
    // Its event loop still answers pings: it is not hung, only silent.
    await new Promise((r) => setTimeout(r, 700));
    expect(h.crashCount).toBe(0);
    expect((await invoke(h, "ok"))?.case).toBe("result");
  });

  it("shuts down on request: calls in flight end as stopped, the next call relaunches", async () => {
    const h = host({ command: fixture("tool-plugin.ts"), shutdownGraceMs: 1_000 });
    await h.start();
    const inflight = collect(h.client(ToolService).invoke({ call: { toolName: "hang" } })).catch(
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 50));
    await h.shutdown();
    expect(await inflight).toBeInstanceOf(PluginStoppedError);
    expect(h.running).toBe(false);
    expect(h.crashCount).toBe(0);
    expect((await h.client(ToolService).getSchema({})).tools.length).toBeGreaterThan(0);
  });

  it("kill() fails calls in flight as crashed", async () => {
    const h = host({ command: fixture("tool-plugin.ts") });
    await h.start();
    const inflight = collect(h.client(ToolService).invoke({ call: { toolName: "hang" } })).catch(
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 50));
    h.kill();
    expect(await inflight).toBeInstanceOf(PluginCrashedError);
  });

  it("fails the launch, quoting the error, when the module throws at start-up", async () => {
    const h = host({ command: fixture("early-exit-plugin.ts") });
    const err = await h.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginLaunchError);
    expect((err as PluginLaunchError).reason).toBe("exited");
    expect((err as PluginLaunchError).message).toContain("exited with status 7");
    expect((err as PluginLaunchError).message).toContain("fatal: configuration file is missing");
  });

  it("refuses an executable that is not a JavaScript module", () => {
    expect(() => new WorkerPluginHost({ name: "bin", command: "/bin/true" })).toThrow(
      /not a JavaScript module/,
    );
  });
});
