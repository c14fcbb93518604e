// A backfill's renders overlap (a producer's Render RPCs do not wait for each other), up
// to a bounded window, and still reach the frontend in sequence order, whatever order the
// renders finish in. Persisted events are rendered only as richly as some subscriber
// wants: by the producer, by the kernel's generic renderer, or not at all.
import { create, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlacedContent } from "@pluggableharness/protocol/render";
import { describe, expect, it } from "vitest";
import { BACKFILL_WINDOW, SessionChannel } from "../../src/frontends/channel.ts";
import { placed } from "../../src/frontends/renderer.ts";
import { discardLog, genericRenderTree, KernelLogger, type RenderableEvent } from "../../src/index.ts";

function message(sequence: number): RenderableEvent {
  return {
    sequence,
    kind: EventKind.MESSAGE,
    kindText: "message",
    producer: { category: PluginCategory.KERNEL, name: "kernel", version: "0.1.0" },
    schemaVersion: "1",
    payload: toBinary(
      MessageEventSchema,
      create(MessageEventSchema, {
        message: {
          role: Role.USER,
          content: [{ block: { case: "text", value: { text: `event ${sequence}` } } }],
        },
      }),
    ),
  };
}

const textOf = (e: ServerEvent) => {
  const v = e.event;
  return v.case === "render" ? JSON.stringify(v.value.content?.content).match(/event (\d+)/)?.[1] : v.case;
};

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("backfill window", () => {
  it("keeps up to BACKFILL_WINDOW renders in flight and delivers them in sequence order", async () => {
    const history = Array.from({ length: 3 * BACKFILL_WINDOW + 5 }, (_, i) => message(i + 1));
    const waiting: Array<() => void> = [];
    let inFlight = 0;
    let most = 0;
    const channel = new SessionChannel(
      "S",
      (e) =>
        new Promise<PlacedContent>((resolve) => {
          most = Math.max(most, ++inFlight);
          waiting.push(() => {
            inFlight--;
            resolve(placed(genericRenderTree(e)));
          });
        }),
      new KernelLogger(discardLog),
    );
    const got: ServerEvent[] = [];
    let done = false;
    const attached = channel
      .attach(
        { interactive: false, deliver: (e) => got.push(e) },
        { opening: { event: { case: "sessionAttached", value: {} } }, backfill: { events: () => history } },
      )
      .then(() => {
        done = true;
      });
    while (!done) {
      await turn();
      // Finish the renders in flight last-started first.
      for (const finish of waiting.splice(0).reverse()) finish();
    }
    await attached;
    expect(most).toBe(BACKFILL_WINDOW);
    expect(got.map(textOf)).toEqual([
      "sessionAttached",
      ...history.map((e) => String(e.sequence)),
      "backfillComplete",
    ]);
  });

  it("reports a failed render in its turn without losing the ones before it", async () => {
    const history = Array.from({ length: 10 }, (_, i) => message(i + 1));
    const errors: string[] = [];
    const channel = new SessionChannel(
      "S",
      async (e) => {
        if (e.sequence === 4) throw new Error("render broke");
        return placed(genericRenderTree(e));
      },
      new KernelLogger((r) => errors.push(r.message)),
    );
    const got: ServerEvent[] = [];
    await channel.attach(
      { interactive: false, deliver: (e) => got.push(e) },
      { opening: { event: { case: "sessionAttached", value: {} } }, backfill: { events: () => history } },
    );
    expect(got.map(textOf)).toEqual(["sessionAttached", "1", "2", "3"]);
    expect(errors).toContain("frontend delivery failed");
  });
});

describe("render preferences", () => {
  const tool = (sequence: number): RenderableEvent => ({
    ...message(sequence),
    producer: { category: PluginCategory.TOOL, name: "fs", version: "1.0.0" },
  });

  function channelWithProducer() {
    const asked: number[] = [];
    const channel = new SessionChannel(
      "S",
      async (e) => {
        asked.push(e.sequence);
        return placed(genericRenderTree(e));
      },
      new KernelLogger(discardLog),
    );
    return { channel, asked };
  }

  it("asks no producer when nobody wants renders, and sends none", async () => {
    const { channel, asked } = channelWithProducer();
    const got: ServerEvent[] = [];
    channel.subscribe({ interactive: false, renders: "none", deliver: (e) => got.push(e) });
    channel.publishPersisted(tool(1));
    channel.publish({ event: { case: "sessionStatusUpdate", value: {} } });
    await channel.flush();
    expect(asked).toEqual([]);
    expect(got.map((e) => e.event.case)).toEqual(["sessionStatusUpdate"]);
  });

  it("renders with the kernel's generic renderer for a subscriber that wants only that", async () => {
    const { channel, asked } = channelWithProducer();
    const got: ServerEvent[] = [];
    channel.subscribe({ interactive: false, renders: "generic", deliver: (e) => got.push(e) });
    channel.publishPersisted(tool(1));
    await channel.flush();
    expect(asked).toEqual([]);
    expect(got.map(textOf)).toEqual(["1"]);
  });

  it("renders once through the producer when any subscriber wants that; a 'none' subscriber still gets nothing", async () => {
    const { channel, asked } = channelWithProducer();
    const rich: ServerEvent[] = [];
    const plain: ServerEvent[] = [];
    const quiet: ServerEvent[] = [];
    channel.subscribe({ interactive: true, deliver: (e) => rich.push(e) });
    channel.subscribe({ interactive: false, renders: "generic", deliver: (e) => plain.push(e) });
    channel.subscribe({ interactive: false, renders: "none", deliver: (e) => quiet.push(e) });
    channel.publishPersisted(tool(1));
    channel.publishPersisted(tool(2));
    await channel.flush();
    expect(asked).toEqual([1, 2]);
    expect(rich.map(textOf)).toEqual(["1", "2"]);
    expect(plain.map(textOf)).toEqual(["1", "2"]);
    expect(quiet).toEqual([]);
  });

  it("backfills a 'none' subscriber with the opening and the end only", async () => {
    const { channel, asked } = channelWithProducer();
    const got: ServerEvent[] = [];
    await channel.attach(
      { interactive: false, renders: "none", deliver: (e) => got.push(e) },
      {
        opening: { event: { case: "sessionAttached", value: {} } },
        backfill: { events: () => [tool(1), tool(2)] },
      },
    );
    expect(asked).toEqual([]);
    expect(got.map((e) => e.event.case)).toEqual(["sessionAttached", "backfillComplete"]);
  });
});
