import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { type ConnInfo, ConnInfoSchema } from "@pluggableharness/protocol/goplugin";
import { describe, expect, it } from "vitest";
import { Broker, BrokerClosedError, BrokerTimeoutError, type ConnInfoStream } from "../src/index.ts";

class FakeStream extends EventEmitter implements ConnInfoStream {
  sent: ConnInfo[] = [];
  ended = false;
  write(m: ConnInfo): boolean {
    this.sent.push(m);
    return true;
  }
  end(): void {
    this.ended = true;
  }
  deliver(serviceId: number, address = `/tmp/s${serviceId}`): void {
    this.emit("data", create(ConnInfoSchema, { serviceId, network: "unix", address }));
  }
}

describe("broker (non-multiplexed)", () => {
  it("queues announcements until the stream is attached", () => {
    const b = new Broker();
    b.announce(7, "unix", "/tmp/seven");
    const s = new FakeStream();
    b.attach(s);
    b.announce(8, "unix", "/tmp/eight");
    expect(s.sent.map((m) => [m.serviceId, m.network, m.address])).toEqual([
      [7, "unix", "/tmp/seven"],
      [8, "unix", "/tmp/eight"],
    ]);
  });

  it("hands an announcement to a waiter, before or after it arrives", async () => {
    const b = new Broker();
    const s = new FakeStream();
    b.attach(s);
    const early = b.waitFor(3);
    s.deliver(3, "/a");
    expect((await early).address).toBe("/a");
    s.deliver(4, "/b");
    expect((await b.waitFor(4)).address).toBe("/b");
    // One announcement satisfies one dial, as in go-plugin.
    await expect(b.waitFor(4, 30)).rejects.toBeInstanceOf(BrokerTimeoutError);
  });

  it("drops unclaimed announcements after the timeout, except retained IDs", async () => {
    const b = new Broker({ retainIds: [99], unclaimedTimeoutMs: 20 });
    const s = new FakeStream();
    b.attach(s);
    s.deliver(5);
    s.deliver(99, "/kernel");
    await new Promise((r) => setTimeout(r, 50));
    await expect(b.waitFor(5, 20)).rejects.toThrow(/service ID 5/);
    expect((await b.waitFor(99)).address).toBe("/kernel");
    expect((await b.waitFor(99)).address).toBe("/kernel"); // retained for every dial
  });

  it("rejects multiplexing knocks", () => {
    const b = new Broker();
    const s = new FakeStream();
    b.attach(s);
    s.emit("data", create(ConnInfoSchema, { serviceId: 2, knock: { knock: true } }));
    expect(s.sent[0]?.knock).toMatchObject({ knock: true, ack: false });
    expect(s.sent[0]?.knock?.error).toContain("not supported");
  });

  it("fails waiters and reports closure when the stream ends", async () => {
    const b = new Broker();
    const s = new FakeStream();
    b.attach(s);
    const closed = new Promise<Error | undefined>((r) => b.onClose(r));
    const waiting = b.waitFor(1);
    const err = new Error("gone");
    s.emit("error", err);
    await expect(waiting).rejects.toBeInstanceOf(BrokerClosedError);
    expect(await closed).toBe(err);
    expect(s.ended).toBe(true);
    expect(() => b.announce(1, "unix", "/x")).toThrow(BrokerClosedError);
  });
});
