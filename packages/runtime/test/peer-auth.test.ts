// Every socket a plugin launch opens authenticates its peer (docs/security/sockets.md): a
// process of the same user that finds the sockets but holds no secret — no pinned
// certificate, no launch token — gets nothing from the kernel's callback socket or the
// plugin's own, whichever way the launch authenticates: AutoMTLS (the default), the launch
// token (a plugin that returns no certificate), or a worker's on-request callback socket.
// The rightful plugin's calls keep working in each case.
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client, credentials, InterceptingCall, type Interceptor } from "@grpc/grpc-js";
import { CHANNEL_OPTIONS, createClient, unixTarget } from "@pluggableharness/goplugin";
import { Health } from "@pluggableharness/protocol/health";
import { KernelCallbackService } from "@pluggableharness/protocol/kernel";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, describe, expect, it } from "vitest";
import { PluginHost, WorkerPluginHost } from "../src/index.ts";
import { fixture, type RecordedCall, recordingCallbacks } from "./helpers.ts";

const hosts: PluginHost[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});

const KERNEL_TOKEN_ENV = "PLUGGABLEHARNESS_KERNEL_TOKEN";

/** A bearer token on every call (what the rightful holder of the token would send). */
const bearer =
  (token: string): Interceptor =>
  (options, next) =>
    new InterceptingCall(next(options), {
      start(metadata, listener, nextStart) {
        metadata.set("authorization", `Bearer ${token}`);
        nextStart(metadata, listener);
      },
    });

/** What a stranger's call on `socket` came to: "answered" or the gRPC status code. */
async function stranger(socket: string, kind: "kernel" | "plugin", token?: string): Promise<string> {
  const interceptors: Interceptor[] = token ? [bearer(token)] : [];
  const c = new Client(unixTarget(socket), credentials.createInsecure(), {
    ...CHANNEL_OPTIONS,
    interceptors,
  });
  clients.push(c);
  try {
    if (kind === "kernel") await createClient(KernelCallbackService, c).describe({}, { timeoutMs: 3_000 });
    else await createClient(Health, c).check({ service: "plugin" }, { timeoutMs: 3_000 });
    return "answered";
  } catch (err) {
    return String((err as { status?: string }).status ?? err);
  }
}

async function invoke(h: PluginHost, toolName: string): Promise<void> {
  for await (const _ of h
    .client(ToolService)
    .invoke({ call: { toolName, callContext: { sessionId: "s1" } } })) {
    // drain
  }
}

describe("a stranger on a plugin launch's sockets", () => {
  it("gets nothing from an AutoMTLS launch, not even with the launch token", async () => {
    const calls: RecordedCall[] = [];
    const h = new PluginHost({
      name: "tls",
      command: fixture("tool-plugin.ts"),
      callbacks: recordingCallbacks(calls),
    });
    hosts.push(h);
    await invoke(h, "emit");
    expect(calls.map((c) => [c.peer.plugin, c.method])).toContainEqual(["tls", "emit"]);
    const dir = dirname(h.address!);
    const token = h.lastSpawn!.env[KERNEL_TOKEN_ENV]!;
    expect(await stranger(join(dir, "kernel"), "kernel")).not.toBe("answered");
    expect(await stranger(join(dir, "kernel"), "kernel", token)).not.toBe("answered");
    expect(await stranger(h.address!, "plugin")).not.toBe("answered");
  });

  it("needs the launch token where the plugin returned no certificate", async () => {
    const calls: RecordedCall[] = [];
    const h = new PluginHost({
      name: "plain",
      command: fixture("tool-plugin.ts"),
      env: { set: { FIXTURE_NO_MTLS: "1" } },
      callbacks: recordingCallbacks(calls),
    });
    hosts.push(h);
    // The plugin still works, its callbacks included (it sends its token).
    await invoke(h, "emit");
    expect(calls.map((c) => c.method)).toEqual(["emit", "log", "countTokens", "runSession"]);
    const kernel = join(dirname(h.address!), "kernel");
    expect(await stranger(kernel, "kernel")).toBe("UNAUTHENTICATED");
    expect(await stranger(kernel, "kernel", "not-the-token")).toBe("UNAUTHENTICATED");
    expect(await stranger(h.address!, "plugin")).toBe("UNAUTHENTICATED");
    // With the token the same call goes through: the token is what keeps the stranger out.
    const token = h.lastSpawn!.env[KERNEL_TOKEN_ENV]!;
    expect(await stranger(kernel, "kernel", token)).toBe("answered");
  });

  it("gets nothing from a worker plugin's callback socket", async () => {
    const calls: RecordedCall[] = [];
    const h = new WorkerPluginHost({
      name: "thread",
      command: fixture("tool-plugin.ts"),
      callbacks: recordingCallbacks(calls),
      launchTimeoutMs: 20_000,
    });
    hosts.push(h);
    // channel_log dials the raw callback socket the worker asks for, with its token.
    await invoke(h, "channel_log");
    expect(calls.map((c) => [c.method, c.sessionId])).toContainEqual(["log", "via-channel"]);
    // This process's socket directories, wherever the runtime keeps them.
    const xdg = process.env["XDG_RUNTIME_DIR"];
    const bases = [tmpdir(), xdg ? join(xdg, "agent") : `/tmp/agent-${process.getuid!()}`];
    const sockets = bases.flatMap((base) => {
      let names: string[] = [];
      try {
        names = readdirSync(base).filter((n) => n.startsWith(`ph-${process.pid}-`));
      } catch {
        // no such base
      }
      return names.flatMap((n) =>
        readdirSync(join(base, n))
          .filter((f) => f === "kernel")
          .map((f) => join(base, n, f)),
      );
    });
    expect(sockets.length).toBeGreaterThan(0);
    for (const s of sockets) expect(await stranger(s, "kernel")).toBe("UNAUTHENTICATED");
  });
});
