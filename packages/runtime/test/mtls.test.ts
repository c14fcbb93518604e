// AutoMTLS end to end: the host's certificate goes out in PLUGIN_CLIENT_CERT, the
// plugin's comes back in the handshake, and both directions (calls into the plugin
// and kernel callbacks through the broker) run over pinned TLS.
import { Client, credentials } from "@grpc/grpc-js";
import { CHANNEL_OPTIONS, createClient, unixTarget } from "@pluggableharness/goplugin";
import { Health } from "@pluggableharness/protocol/health";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, describe, expect, it } from "vitest";
import { PluginHost } from "../src/index.ts";
import { fixture, type RecordedCall, recordingCallbacks } from "./helpers.ts";

const hosts: PluginHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});

describe("AutoMTLS", () => {
  it("runs calls and broker callbacks over mutually authenticated TLS", async () => {
    const calls: RecordedCall[] = [];
    const h = new PluginHost({
      name: "secure",
      command: fixture("tool-plugin.ts"),
      autoMTLS: true,
      callbacks: recordingCallbacks(calls),
    });
    hosts.push(h);
    await h.start();
    const events = [];
    for await (const ev of h
      .client(ToolService)
      .invoke({ call: { toolName: "emit", callContext: { sessionId: "s1" } } })) {
      events.push(ev);
    }
    const last = events.at(-1)!.event!.event;
    expect(last.case === "result" && last.value.payload).toEqual({
      id: "evt-secure-1",
      sequence: 1,
      tokens: 42,
    });
    expect(calls.map((c) => [c.peer.plugin, c.method])).toEqual([
      ["secure", "emit"],
      ["secure", "log"],
      ["secure", "countTokens"],
      ["secure", "runSession"],
    ]);

    // Without the host's certificate nobody gets in.
    const intruder = new Client(unixTarget(h.address!), credentials.createInsecure(), CHANNEL_OPTIONS);
    try {
      const err = await createClient(Health, intruder)
        .check({ service: "plugin" }, { timeoutMs: 2_000 })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ name: "RpcError" });
    } finally {
      intruder.close();
    }
  });
});
