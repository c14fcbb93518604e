// The sandbox host's failure paths, on the runtime alone (the kernel-level behaviour is in
// packages/kernel/test/plugins/sandbox-host.test.ts): a host that cannot start fails the
// launch with a clear reason and leaves nothing running; a host that sends what its program
// never would (something inside misbehaves) is killed, not the kernel; a host that stops answering is
// killed when one of its threads must end, so a stop never hangs; with no sandbox to apply
// the thread starts in the kernel's process, as a worker's would.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { HostedPluginHost, PluginCrashedError, PluginLaunchError, sandboxHostPids } from "../src/index.ts";
import { type PluginSandbox, probeSandbox } from "../src/sandbox.ts";
import { fixture } from "./helpers.ts";

const HAZARD = fixture("hazard/src/main.ts");
const probe = probeSandbox();
const dir = mkdtempSync(join(tmpdir(), "ph-host-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hosts: HostedPluginHost[] = [];
function host(box: PluginSandbox | undefined, heapLimitMb?: number): HostedPluginHost {
  const h = new HostedPluginHost({
    name: "hosted",
    command: HAZARD,
    cwd: dir,
    launchTimeoutMs: 20_000,
    sandbox: () => box,
    ...(heapLimitMb ? { watchdog: { heapLimitMb } } : {}),
  });
  hosts.push(h);
  return h;
}

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});

const box = (bwrap: string): PluginSandbox => ({
  bwrap,
  readOnly: false,
  writable: [dir],
  protectedPaths: [],
  network: false,
});

/** One call of a hazard operation: its terminal event, or the call's error. */
async function collectInvoke(h: HostedPluginHost, toolName: string) {
  const events = [];
  for await (const e of h
    .client(ToolService)
    .invoke({ call: { id: `c-${toolName}`, toolName, arguments: {} } }))
    events.push(e);
  return events.at(-1)?.event?.event;
}

/** The host program's Node process below the host's bwrap (whose pid the runtime knows). */
function hostNode(bwrapPid: number): number | undefined {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const below = [bwrapPid];
  for (let i = 0; i < below.length; i++) below.push(...(children.get(below[i]!) ?? []));
  return below.find((pid) => {
    try {
      // bwrap's own command line holds the program too: the one that runs it is Node.
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      return cmdline.startsWith(`${process.execPath}\0`) && cmdline.includes("const threads = new Map()");
    } catch {
      return false;
    }
  });
}

describe("the sandbox host", () => {
  it("fails the launch with the host's reason when bubblewrap cannot run, leaving nothing", async () => {
    const h = host(box(join(dir, "no-such-bwrap")));
    const err = await h.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginLaunchError);
    expect((err as PluginLaunchError).reason).toBe("exited");
    // The host's own last words name what failed (bwrap runs behind the filter's shell).
    expect((err as Error).message).toMatch(
      /the sandbox host process exited with status \d+: .*no-such-bwrap/,
    );
    expect(sandboxHostPids()).toEqual([]);
  });

  it("starts the thread in the kernel's process when no sandbox applies", async () => {
    const h = host(undefined);
    await h.start();
    expect(h.isolation).toBe("hosted");
    expect(h.pid).toBe(process.pid);
    expect(sandboxHostPids()).toEqual([]);
  });

  it.skipIf(!probe.ok)(
    "watches a hosted thread's heap through the host: over its limit, out_of_memory",
    async () => {
      const h = host(box(probe.ok ? probe.bwrap : ""), 64);
      const err = await collectInvoke(h, "oom").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PluginCrashedError);
      expect((err as PluginCrashedError).kind).toBe("out_of_memory");
      expect((err as Error).message).toMatch(/MiB of heap, over its 64 MiB limit/);
      // The next call relaunches it (in a new host: the ended thread was its host's last).
      expect((await collectInvoke(h, "ok"))?.case).toBe("result");
    },
  );

  it.skipIf(!probe.ok)("kills a host that sends bytes it never would, and only the host", async () => {
    const h = host(box(probe.ok ? probe.bwrap : ""));
    await h.start();
    const [bwrap] = sandboxHostPids();
    const err = await collectInvoke(h, "forge_host_message").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PluginCrashedError);
    expect((err as Error).message).toMatch(/the sandbox host was stopped: it sent a malformed message/);
    expect(sandboxHostPids()).not.toContain(bwrap);
    expect((await collectInvoke(h, "ok"))?.case).toBe("result");
  });

  it.skipIf(!probe.ok)("kills a host that does not end a thread, so stopping never hangs", async () => {
    const h = host(box(probe.ok ? probe.bwrap : ""));
    await h.start();
    const [bwrap] = sandboxHostPids();
    expect(h.pid).toBe(bwrap);
    const node = hostNode(bwrap!);
    expect(node).toBeDefined();
    // The host's program stops answering anything.
    process.kill(node!, "SIGSTOP");
    const started = Date.now();
    h.kill();
    while (h.running && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(h.running).toBe(false);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sandboxHostPids()).toEqual([]);
    // A later launch gets a new host.
    await h.start();
    expect(sandboxHostPids()).toHaveLength(1);
    expect(sandboxHostPids()[0]).not.toBe(bwrap);
  });
});
