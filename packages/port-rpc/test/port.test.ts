import { MessageChannel } from "node:worker_threads";
import { createClient, implement, RpcError } from "@pluggableharness/goplugin";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { describe, expect, it } from "vitest";
import { Echo } from "../../goplugin/test/fixtures/echo-service.ts";
import { rpcChecks } from "../../goplugin/test/rpc-checks.ts";
import { PortEndpoint, STREAM_WINDOW } from "../src/index.ts";

function pair(): { caller: PortEndpoint; callee: PortEndpoint } {
  const { port1, port2 } = new MessageChannel();
  return { caller: new PortEndpoint(port1), callee: new PortEndpoint(port2) };
}

// The same checks the grpc-js channel passes (packages/goplugin/test/rpc-checks.ts).
let shared: { caller: PortEndpoint; callee: PortEndpoint } | undefined;
rpcChecks("MessagePort", {
  async start(handlers) {
    shared = pair();
    shared.callee.server.addService(serviceDefinition(Echo), handlers);
    return shared.caller.channel;
  },
  stop() {
    shared?.caller.close();
  },
});

const until = async (pred: () => boolean, ms = 3_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe("port channel specifics", () => {
  it("answers UNIMPLEMENTED for a method nobody serves", async () => {
    const { caller } = pair();
    const echo = createClient(Echo, caller.channel);
    const err = await echo.say({ text: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect(err).toMatchObject({ code: 12, method: "/test.echo.v1.Echo/Say" });
    caller.close();
  });

  it("holds a fast producer at the stream window until the consumer reads", async () => {
    const { caller, callee } = pair();
    let produced = 0;
    callee.server.addService(
      serviceDefinition(Echo),
      implement(Echo, {
        async *repeat(req) {
          for (let i = 0; i < req.count; i++) {
            produced = i + 1;
            yield { index: i };
          }
        },
      }),
    );
    const stream = createClient(Echo, caller.channel).repeat({ count: 10_000 });
    const first = await stream.next();
    expect(first.value?.index).toBe(0);
    // The iterator buffers up to its own high-water mark and stops granting credit; the
    // producer then stops after at most two windows, not after 10,000 messages.
    await new Promise((r) => setTimeout(r, 100));
    expect(produced).toBeGreaterThan(STREAM_WINDOW / 2);
    expect(produced).toBeLessThanOrEqual(3 * STREAM_WINDOW);
    let n = 1;
    for await (const m of stream) {
      expect(m.index).toBe(n);
      n++;
    }
    expect(n).toBe(10_000);
    caller.close();
  });

  it("carries metadata and aborts the server's signal when the deadline passes", async () => {
    const { caller, callee } = pair();
    let seen: unknown;
    let abortedAt = 0;
    const started = Date.now();
    callee.server.addService(
      serviceDefinition(Echo),
      implement(Echo, {
        say: async (_req, ctx) => {
          seen = ctx.metadata.get("x-trace")[0];
          await new Promise<void>((resolve) =>
            ctx.signal.addEventListener("abort", () => {
              abortedAt = Date.now();
              resolve();
            }),
          );
          return {};
        },
      }),
    );
    const err = await createClient(Echo, caller.channel)
      .say({ text: "x" }, { timeoutMs: 80, metadata: { "x-trace": "t-1" } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: "DEADLINE_EXCEEDED" });
    await until(() => abortedAt > 0);
    expect(abortedAt - started).toBeGreaterThanOrEqual(70);
    expect(seen).toBe("t-1");
    caller.close();
  });

  it("fails every call in flight as UNAVAILABLE when the port closes", async () => {
    const { caller, callee } = pair();
    callee.server.addService(
      serviceDefinition(Echo),
      implement(Echo, { say: () => new Promise(() => {}), repeat: async function* () {} }),
    );
    const echo = createClient(Echo, caller.channel);
    const unary = echo.say({ text: "x" }).catch((e: unknown) => e);
    const stream = (async () => {
      for await (const _ of echo.repeat({ count: 1, delayMs: 10_000 })) {
        // nothing arrives
      }
    })().catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 20));
    callee.close();
    expect(await unary).toMatchObject({ code: 14 });
    // The streaming handler ended at once (empty generator); the call has completed normally.
    expect(await stream).toBeUndefined();
    expect(caller.pendingCalls).toBe(0);
  });

  it("answers pings from the receiving event loop, and control requests both ways", async () => {
    const { caller, callee } = pair();
    callee.handle("add", (p) => (p as number[]).reduce((a, b) => a + b, 0));
    caller.handle("fail", () => {
      throw new Error("no");
    });
    await caller.ping();
    expect(await caller.request("add", [1, 2, 3])).toBe(6);
    await expect(callee.request("fail")).rejects.toThrow("no");
    await expect(callee.request("missing")).rejects.toThrow(/no handler/);
    const notes: unknown[] = [];
    callee.onNotify("log", (p) => notes.push(p));
    caller.notify("log", "line");
    await until(() => notes.length === 1);
    expect(notes).toEqual(["line"]);
    caller.close();
  });

  it("does not detach bytes the sender still holds", async () => {
    const { caller, callee } = pair();
    callee.server.addService(
      serviceDefinition(Echo),
      implement(Echo, { say: (req) => ({ text: req.text.repeat(2) }) }),
    );
    const echo = createClient(Echo, caller.channel);
    const replies = await Promise.all(["a", "bb", "ccc"].map((text) => echo.say({ text })));
    expect(replies.map((r) => r.text)).toEqual(["aa", "bbbb", "cccccc"]);
    caller.close();
  });
});
