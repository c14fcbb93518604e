// A tool process that dies mid-Invoke: on the wire the call fails with UNAVAILABLE, and
// the host reports that same failure as the kernel-synthesised process_crashed.
import { Client, credentials } from "@grpc/grpc-js";
import {
  CHANNEL_OPTIONS,
  createClient,
  KERNEL_TOKEN_ENV,
  RpcError,
  sendToken,
  unixTarget,
} from "@pluggableharness/goplugin";
import { ToolErrorCategory, ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, expect, it } from "vitest";
import { PluginCrashedError, PluginHost, toolErrorFor } from "../src/index.ts";
import { fixture } from "./helpers.ts";

let host: PluginHost | undefined;
let raw: Client | undefined;
afterEach(async () => {
  raw?.close();
  await host?.shutdown();
});

async function failureOf(stream: AsyncIterable<unknown>, onFirst: () => void): Promise<unknown> {
  try {
    for await (const _ of stream) onFirst();
  } catch (err) {
    return err;
  }
  return undefined;
}

it("a tool process dying mid-Invoke fails the call with gRPC UNAVAILABLE, reported as process_crashed", async () => {
  // Plaintext, so a second connection can be made by hand: with the launch token the
  // plugin requires then, straight to its socket, it shows the bare wire status.
  host = new PluginHost({
    name: "tools",
    command: fixture("tool-plugin.ts"),
    launchTimeoutMs: 15_000,
    autoMTLS: false,
  });
  await host.start();
  const pid = host.pid!;
  raw = new Client(unixTarget(host.address!), credentials.createInsecure(), {
    ...CHANNEL_OPTIONS,
    interceptors: [sendToken(host.lastSpawn!.env[KERNEL_TOKEN_ENV]!)],
  });
  const wire = createClient(ToolService, raw);
  const call = { call: { toolName: "count", arguments: { n: 10_000, delayMs: 20 } } };

  let started = 0;
  let killed = false;
  const bothStarted = () => {
    if (++started >= 2 && !killed) {
      killed = true;
      process.kill(pid, "SIGKILL");
    }
  };
  const once = () => {
    let seen = false;
    return () => {
      if (seen) return;
      seen = true;
      bothStarted();
    };
  };
  const [onWire, viaHost] = await Promise.all([
    failureOf(wire.invoke(call), once()),
    failureOf(host.client(ToolService).invoke(call), once()),
  ]);

  expect(onWire).toBeInstanceOf(RpcError);
  expect((onWire as RpcError).status).toBe("UNAVAILABLE");
  expect(viaHost).toBeInstanceOf(PluginCrashedError);
  expect(toolErrorFor(viaHost)).toMatchObject({
    category: ToolErrorCategory.PROCESS_CRASHED,
    retryable: true,
  });
});
