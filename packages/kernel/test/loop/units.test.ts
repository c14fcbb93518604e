// The loop's pure pieces, without plugin processes: guards, naming, backoff, template
// expansion, slash command argument mapping, the invocation tracker, the session channel's ordering and the generic
// renderer.
import { readFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import {
  HookErrorEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { HookErrorCategory } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { Region, TextStyle } from "@pluggableharness/protocol/render";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { SessionChannel } from "../../src/frontends/channel.ts";
import { hasContent, placed } from "../../src/frontends/renderer.ts";
import {
  CircuitBreaker,
  CostNode,
  callHash,
  commandArguments,
  DoomLoopDetector,
  declaredToolName,
  discardLog,
  expandTemplate,
  genericRenderTree,
  InvocationTracker,
  KernelLogger,
  type RenderableEvent,
  retryDelayMs,
  retryWait,
} from "../../src/index.ts";
import { checkBounds } from "../../src/loop/turn/bounds.ts";

describe("bounds", () => {
  it("rolls cost up the session tree; the tightest remaining budget on the path wins", () => {
    const root = new CostNode(1.0);
    const child = new CostNode(5.0, root);
    const grandchild = new CostNode(undefined, child);
    grandchild.charge(0.4);
    child.charge(0.3);
    expect(root.spentUsd).toBeCloseTo(0.7);
    expect(child.spentUsd).toBeCloseTo(0.7);
    expect(grandchild.remainingUsd()).toBeCloseTo(0.3); // the root's bound is tighter than the child's
    expect(new CostNode().remainingUsd()).toBe(Number.POSITIVE_INFINITY);
    root.charge(0.3);
    expect(checkBounds({ turns: 0, elapsedMs: 0, cost: grandchild })).toBe("max_cost_usd");
  });

  it("checks each bound independently", () => {
    const cost = new CostNode();
    expect(checkBounds({ maxTurns: 3, turns: 2, elapsedMs: 0, cost })).toBeUndefined();
    expect(checkBounds({ maxTurns: 3, turns: 3, elapsedMs: 0, cost })).toBe("max_turns");
    expect(checkBounds({ maxWallClockS: 10, turns: 0, elapsedMs: 9_999, cost })).toBeUndefined();
    expect(checkBounds({ maxWallClockS: 10, turns: 0, elapsedMs: 10_000, cost })).toBe("max_wall_clock_s");
  });

  it("detects `threshold` identical calls in a row, within the window", () => {
    const d = new DoomLoopDetector(3, 10);
    const a = callHash("tools__read", { path: "a", n: 1 });
    const same = callHash("tools__read", { n: 1, path: "a" });
    expect(same).toBe(a); // canonical input: key order does not matter
    const b = callHash("tools__read", { path: "b" });
    expect([d.record(a), d.record(a), d.record(b), d.record(a), d.record(a)]).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(d.record(a)).toBe(true);
  });

  it("trips on consecutive denials (an allow resets) and on repeated crashes of one provider", () => {
    const b = new CircuitBreaker(3, 2);
    expect([
      b.decision(true),
      b.decision(true),
      b.decision(false),
      b.decision(true),
      b.decision(true),
    ]).toEqual([false, false, false, false, false]);
    expect(b.decision(true)).toBe(true);
    expect([
      b.callEnded("x", true),
      b.callEnded("y", true),
      b.callEnded("x", false),
      b.callEnded("x", true),
    ]).toEqual([false, false, false, false]);
    expect(b.callEnded("x", true)).toBe(true);
  });
});

describe("the denial breaker counts denials however they interleave", () => {
  const limits = { consecutive: 5, window: { denials: 4, decisions: 8 }, sameCall: 3, turns: 100 };

  it("trips when one call is denied a third time, allowed calls in between", () => {
    const b = new CircuitBreaker(limits, 3);
    const seq = [
      b.decision(true, "w"),
      b.decision(false),
      b.decision(false),
      b.decision(true, "w"),
      b.decision(false),
    ];
    expect(seq).toEqual([false, false, false, false, false]);
    expect(b.decision(true, "w")).toBe(true);
  });

  it("trips when denials fill the window, whatever the calls and the allows between them", () => {
    const b = new CircuitBreaker(limits, 3);
    const seq: boolean[] = [];
    for (let i = 0; i < 3; i++) seq.push(b.decision(true, `call${i}`), b.decision(false));
    expect(seq.every((x) => !x)).toBe(true);
    expect(b.decision(true, "call3")).toBe(true);
  });

  it("lets denials that thin out in a long run go on (they leave the window)", () => {
    const b = new CircuitBreaker(limits, 3);
    for (let i = 0; i < 40; i++) {
      expect(b.decision(true, `c${i}`)).toBe(false);
      for (let j = 0; j < 3; j++) expect(b.decision(false)).toBe(false);
    }
  });

  it("starts afresh on reset", () => {
    const b = new CircuitBreaker(limits, 3);
    b.decision(true, "w");
    b.decision(true, "w");
    b.reset();
    expect(b.decision(true, "w")).toBe(false);
  });
});

describe("naming, backoff, templates", () => {
  it("presents tools as <provider>__<tool>, sanitised and at most 64 characters", () => {
    expect(declaredToolName("filesystem", "read_file")).toBe("filesystem__read_file");
    expect(declaredToolName("my-fs", "read.file")).toBe("my-fs__read_file");
    const long = declaredToolName("p".repeat(40), "t".repeat(40));
    expect(long).toHaveLength(64);
    expect(long).not.toBe(declaredToolName("p".repeat(40), `${"t".repeat(39)}u`));
  });

  it("backs off exponentially with equal jitter and never retries sooner than retry_after", () => {
    const deps = {
      settings: {
        retry: { base_delay_ms: 500, backoff_factor: 2, max_retries: 5 },
        max_retry_delay_ms: 60_000,
      } as never,
      clock: { now: () => 0, sleep: async () => {}, random: () => 0 },
    };
    expect([0, 1, 2].map((n) => retryDelayMs(deps, n, undefined))).toEqual([250, 500, 1000]);
    const high = { ...deps, clock: { ...deps.clock, random: () => 0.999 } };
    expect(retryDelayMs(high, 0, undefined)).toBeCloseTo(499.75);
    expect(retryDelayMs(deps, 0, 7)).toBe(7000);
  });

  it("never waits longer than max_retry_delay_ms, whatever the vendor or the backoff asks", () => {
    const deps = {
      settings: {
        retry: { base_delay_ms: 500, backoff_factor: 10, max_retries: 9 },
        max_retry_delay_ms: 60_000,
      } as never,
      clock: { now: () => 0, sleep: async () => {}, random: () => 0 },
    };
    expect(retryWait(deps, 0, 3600)).toEqual({ delayMs: 60_000, askedMs: 3_600_000, capped: true });
    expect(retryWait(deps, 0, Number.POSITIVE_INFINITY)).toMatchObject({ delayMs: 60_000, capped: true });
    expect(retryWait(deps, 0, 1e308)).toMatchObject({ delayMs: 60_000, capped: true });
    // The backoff alone (500 ms * 10^8) is cut too.
    expect(retryWait(deps, 8, undefined)).toEqual({ delayMs: 60_000, capped: true });
    // An unreadable or negative hint is no hint.
    expect(retryWait(deps, 0, Number.NaN)).toEqual({ delayMs: 250, capped: false });
    expect(retryWait(deps, 0, -5)).toEqual({ delayMs: 250, askedMs: 0, capped: false });
    expect(retryWait(deps, 0, 59)).toEqual({ delayMs: 59_000, askedMs: 59_000, capped: false });
  });

  it("expands prompt templates", () => {
    expect(expandTemplate("review {args} now", "  a.ts b.ts ")).toBe("review a.ts b.ts now");
    expect(expandTemplate("{1} then {2}{3}", "x y")).toBe("x then y");
    expect(expandTemplate("{unknown}", "x")).toBe("{unknown}");
  });
});

describe("invocation tracker", () => {
  it("knows which sessions a plugin is serving a call for, and for which category", async () => {
    const t = new InvocationTracker();
    const end = t.begin("tools", "S1", "tool");
    const endHook = t.begin("tools", "S1", "hook");
    expect(t.categoryFor("tools", "S1")).toBe("tool");
    expect(t.categoryFor("tools", "S2")).toBeUndefined();
    expect(t.categoryFor("other", "S1")).toBeUndefined();
    end();
    end(); // idempotent
    expect(t.categoryFor("tools", "S1")).toBe("hook");
    endHook();
    expect(t.categoryFor("tools", "S1")).toBeUndefined();
    await t.run("m", "S3", "model", async () => {
      expect(t.categoryFor("m", "S3")).toBe("model");
    });
    expect(t.categoryFor("m", "S3")).toBeUndefined();
  });
});

function stored(
  sequence: number,
  kind: EventKind,
  payload: Uint8Array,
  schemaVersion = "1",
): RenderableEvent {
  return {
    sequence,
    kind,
    kindText: EventKind[kind]!.toLowerCase(),
    producer: { category: PluginCategory.KERNEL, name: "kernel", version: "0.1.0" },
    schemaVersion,
    payload,
  };
}

describe("session channel", () => {
  it("backfills up to the last queued event, then delivers later events live, each exactly once", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const rendered: number[] = [];
    const channel = new SessionChannel(
      "S",
      async (e) => {
        if (e.sequence === 1) await gate; // a slow render holds the queue
        rendered.push(e.sequence);
        return placed(genericRenderTree(e));
      },
      new KernelLogger(discardLog),
    );
    const early: ServerEvent[] = [];
    channel.subscribe({ interactive: false, deliver: (e) => early.push(e) });
    const msg = toBinary(MessageEventSchema, create(MessageEventSchema, {}));
    channel.publishPersisted(stored(1, EventKind.MESSAGE, msg));
    const late: ServerEvent[] = [];
    const history = [stored(1, EventKind.MESSAGE, msg), stored(2, EventKind.MESSAGE, msg)];
    channel.publishPersisted(stored(2, EventKind.MESSAGE, msg));
    const attached = channel.attach(
      { interactive: true, deliver: (e) => late.push(e) },
      {
        opening: { event: { case: "sessionAttached", value: {} } },
        requestId: "r",
        backfill: { events: (through) => history.filter((e) => e.sequence <= through) },
      },
    );
    channel.publishPersisted(stored(3, EventKind.MESSAGE, msg));
    release();
    await attached;
    await channel.flush();
    expect(late.map((e) => e.event.case)).toEqual([
      "sessionAttached",
      "render",
      "render",
      "backfillComplete",
      "render",
    ]);
    const complete = late[3]!.event;
    expect(complete.case === "backfillComplete" && complete.value.lastSequence).toBe(2n);
    expect(early.map((e) => e.event.case)).toEqual(["render", "render", "render"]);
    expect(channel.hasInteractiveSubscriber()).toBe(true);
  });
});

describe("session channel without subscribers", () => {
  it("renders events queued while an attach is pending, so the attaching frontend misses nothing", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const channel = new SessionChannel(
      "S",
      async (e) => {
        if (e.sequence === 1) await gate;
        return placed(genericRenderTree(e));
      },
      new KernelLogger(discardLog),
    );
    const msg = toBinary(MessageEventSchema, create(MessageEventSchema, {}));
    const history = [stored(1, EventKind.MESSAGE, msg)];
    channel.publishPersisted(history[0]!); // no subscriber yet: only the backfill will carry it
    const got: ServerEvent[] = [];
    const attached = channel.attach(
      { interactive: false, deliver: (e) => got.push(e) },
      { opening: { event: { case: "sessionAttached", value: {} } }, backfill: { events: () => history } },
    );
    channel.publishPersisted(stored(2, EventKind.MESSAGE, msg));
    release();
    await attached;
    await channel.flush();
    expect(got.map((e) => e.event.case)).toEqual(["sessionAttached", "render", "backfillComplete", "render"]);
  });
});

describe("the generic renderer module", () => {
  it("imports the protocol's generated types only, so session readers can load it without the kernel", () => {
    // It, the sibling it re-exports (stored-inputs.ts, which readers use beside it) with the
    // gate's write half of that rule (loop/turn/stored-events.ts), the one it summarises tool
    // arguments with and the pure memory-link parser it renders [[references]] with (and the
    // SDK's dependency-free memory-id rule that parser uses, never the SDK's root).
    const specifiers = [
      "frontends/generic-render.ts",
      "frontends/stored-inputs.ts",
      "loop/turn/stored-events.ts",
      "frontends/argument-summary.ts",
      "memory/links.ts",
    ].flatMap((f) => {
      const src = readFileSync(new URL(`../../src/${f}`, import.meta.url), "utf8");
      return [...src.matchAll(/^(?:import|export)[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]!);
    });
    expect(specifiers.length).toBeGreaterThan(5);
    expect(
      specifiers.filter(
        (s) =>
          !/^(@bufbuild\/protobuf|@pluggableharness\/protocol\/\w+|@pluggableharness\/plugin-sdk\/memory-ids|\.\/(stored-inputs|argument-summary)\.ts|\.\.\/(memory\/links|loop\/turn\/stored-events)\.ts)$/.test(
            s,
          ),
      ),
    ).toEqual([]);
  });
});

describe("each tool call shown once", () => {
  const message = (seq: number, role: number, content: object[]) =>
    stored(
      seq,
      EventKind.MESSAGE,
      toBinary(
        MessageEventSchema,
        create(MessageEventSchema, { message: { role, content: content as never } }),
      ),
    );
  const use = { block: { case: "toolUse", value: { id: "c1", name: "fs__read", input: { path: "a" } } } };
  const result = {
    block: {
      case: "toolResult",
      value: { toolUseId: "c1", content: [{ block: { case: "text", value: { text: "{}" } } }] },
    },
  };
  const said = { block: { case: "text", value: { text: "Reading a." } } };

  it("leaves tool calls and results out of messages; a message of nothing else renders empty", () => {
    const withText = genericRenderTree(message(1, 2, [said, use]));
    expect(hasContent(withText)).toBe(true);
    expect(JSON.stringify(withText)).toContain("Reading a.");
    expect(JSON.stringify(withText)).not.toContain("fs__read");
    expect(hasContent(genericRenderTree(message(2, 2, [use])))).toBe(false);
    expect(hasContent(genericRenderTree(message(3, 1, [result])))).toBe(false);
    const notFound = genericRenderTree(
      stored(
        4,
        EventKind.TOOL_RESULT,
        toBinary(
          ToolResultEventSchema,
          create(ToolResultEventSchema, {
            provider: "",
            toolName: "fs__gone",
            outcome: {
              case: "error",
              value: { category: ToolErrorCategory.NOT_FOUND, message: "no such tool" },
            },
          }),
        ),
      ),
    );
    expect(notFound.root?.node.case === "collapsible" && notFound.root.node.value.summary).toBe("✗ fs__gone");
  });

  it("sends no render for an event with nothing to show, live or in a backfill", async () => {
    const channel = new SessionChannel(
      "S",
      async (e) => placed(genericRenderTree(e)),
      new KernelLogger(discardLog),
    );
    const live: ServerEvent[] = [];
    channel.subscribe({ interactive: false, deliver: (e) => live.push(e) });
    const history = [
      message(1, 1, [said]),
      message(2, 2, [use]),
      message(3, 1, [result]),
      message(4, 2, [said]),
    ];
    for (const e of history) channel.publishPersisted(e);
    const late: ServerEvent[] = [];
    await channel.attach(
      { interactive: false, deliver: (e) => late.push(e) },
      { opening: { event: { case: "sessionAttached", value: {} } }, backfill: { events: () => history } },
    );
    await channel.flush();
    expect(live.map((e) => e.event.case)).toEqual(["render", "render"]);
    expect(late.map((e) => e.event.case)).toEqual([
      "sessionAttached",
      "render",
      "render",
      "backfillComplete",
    ]);
    expect(late.slice(1, 3).map((e) => JSON.stringify(e.event.value))).toEqual(
      live.map((e) => JSON.stringify(e.event.value)),
    );
  });
});

describe("generic renderer", () => {
  it("renders messages, tool results, plans and hook errors, and degrades for unknown shapes", () => {
    const message = genericRenderTree(
      stored(
        1,
        EventKind.MESSAGE,
        toBinary(
          MessageEventSchema,
          create(MessageEventSchema, {
            message: { role: 2, content: [{ block: { case: "text", value: { text: "hello there" } } }] },
          }),
        ),
      ),
    );
    expect(JSON.stringify(message)).toContain("hello there");
    expect(JSON.stringify(message)).toContain("Assistant");

    const failed = genericRenderTree(
      stored(
        2,
        EventKind.TOOL_RESULT,
        toBinary(
          ToolResultEventSchema,
          create(ToolResultEventSchema, {
            provider: "fs",
            toolName: "write",
            outcome: {
              case: "error",
              value: { category: ToolErrorCategory.PERMISSION_DENIED, message: "nope" },
            },
          }),
        ),
      ),
    );
    const node = failed.root?.node;
    expect(node?.case).toBe("collapsible");
    const child = node?.case === "collapsible" ? node.value.children[0]?.node : undefined;
    expect(child?.case === "text" && [child.value.content, child.value.style]).toEqual([
      "permission_denied: nope",
      TextStyle.ERROR,
    ]);

    const plan = genericRenderTree(
      stored(
        3,
        EventKind.PLAN,
        toBinary(
          PlanEventSchema,
          create(PlanEventSchema, {
            plan: {
              items: [
                { provider: "fs", toolName: "write", decision: PlanDecision.ASK, decidedBy: "default" },
              ],
            },
          }),
        ),
      ),
    );
    expect(plan.root?.node.case === "table" && plan.root.node.value.rows[0]?.cells).toEqual([
      "fs.write",
      "ask",
      "default",
      "",
    ]);

    const hook = genericRenderTree(
      stored(
        4,
        EventKind.HOOK_ERROR,
        toBinary(
          HookErrorEventSchema,
          create(HookErrorEventSchema, {
            error: {
              subscriber: { name: "audit" },
              category: HookErrorCategory.OBSERVE_FAILED,
              message: "boom",
            },
          }),
        ),
      ),
    );
    expect(hook.root?.node.case === "text" && hook.root.node.value.content).toBe(
      "hook audit failed (observe_failed): boom",
    );

    const future = genericRenderTree(stored(5, EventKind.MESSAGE, new Uint8Array([1]), "2"));
    expect(future.root?.node.case === "text" && future.root.node.value.content).toContain("schema version 2");
    const garbage = genericRenderTree(stored(6, EventKind.PLAN, new Uint8Array([0xff, 0xff, 0xff])));
    expect(garbage.root?.node.case === "text" && garbage.root.node.value.content).toContain(
      "could not be decoded",
    );
    expect(placed(garbage).region).toBe(Region.MAIN_CHAT);
  });
});

describe("direct-invoke argument mapping", () => {
  const str = { type: "string" };
  const writeSchema = {
    type: "object",
    properties: {
      path: str,
      content: str,
      mode: { type: "integer" },
      force: { type: "boolean" },
      tags: { type: "array", items: str },
    },
    required: ["path", "content"],
  };
  const pathOnly = {
    type: "object",
    properties: { path: str, depth: { type: "integer" } },
    required: ["path"],
  };

  it("reads key=value words as typed properties, with quoting for spaces", () => {
    expect(
      commandArguments(
        `path="my file.txt" content='a = b' mode=420 force=true tags='["x","y"]'`,
        writeSchema,
      ),
    ).toStrictEqual({
      ok: true,
      value: { path: "my file.txt", content: "a = b", mode: 420, force: true, tags: ["x", "y"] },
    });
  });

  it("takes a JSON object as it is, and nothing as {}", () => {
    expect(commandArguments(' {"path": "a", "depth": 2} ', pathOnly)).toStrictEqual({
      ok: true,
      value: { path: "a", depth: 2 },
    });
    expect(commandArguments("   ", pathOnly)).toStrictEqual({ ok: true, value: {} });
  });

  it("puts any other text whole into the tool's one required string field", () => {
    expect(commandArguments("src/a b.ts", pathOnly)).toStrictEqual({
      ok: true,
      value: { path: "src/a b.ts" },
    });
    // "x=1" names no property, so it is text, not a pair.
    expect(commandArguments("x=1", pathOnly)).toStrictEqual({ ok: true, value: { path: "x=1" } });
  });

  it("explains what to write when the text cannot be mapped", () => {
    const fail = (text: string, schema: object) => {
      const r = commandArguments(text, schema as never);
      if (r.ok) throw new Error(`"${text}" was mapped to ${JSON.stringify(r.value)}`);
      return r.error;
    };
    expect(fail("hello world", writeSchema)).toContain("path=… content=… mode=… force=… tags=…");
    expect(fail("mode=fast path=a", writeSchema)).toBe('mode: "fast" is not a number');
    expect(fail("force=yes", writeSchema)).toBe('force: "yes" is not true or false');
    expect(fail("path=a path=b", writeSchema)).toBe("path is given twice");
    expect(fail('path="open', writeSchema)).toBe("a quote is not closed");
    expect(fail("{not json", pathOnly)).toContain("not a JSON object");
    expect(
      fail("[1, 2]", { type: "object", properties: { n: { type: "array" } }, required: ["n"] }),
    ).toContain("cannot map");
  });
});

describe("the denial breaker's turn count", () => {
  it("trips after turns in a row that each met a denial, however many allowed calls they mixed in", () => {
    const b = new CircuitBreaker(
      { consecutive: 5, window: { denials: 100, decisions: 200 }, sameCall: 100, turns: 3 },
      3,
    );
    const turn = (denied: boolean) => {
      for (let i = 0; i < 3; i++) b.decision(false);
      b.decision(denied, `call${Math.random()}`);
      return b.turnEnded(denied);
    };
    expect([turn(true), turn(true), turn(false), turn(true), turn(true)]).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(turn(true)).toBe(true);
  });
});

describe("the history's token estimate", () => {
  it("is the estimate of the messages' joined text, however often it is asked for", async () => {
    const { estimateInputTokens } = await import("../../src/loop/turn/model-call.ts");
    const { MessageSchema, Role } = await import("@pluggableharness/protocol/content");
    const messages = [
      create(MessageSchema, {
        role: Role.USER,
        content: [{ block: { case: "text", value: { text: "héllo" } } }],
      }),
      create(MessageSchema, {
        role: Role.ASSISTANT,
        content: [
          { block: { case: "text", value: { text: "ok " } } },
          { block: { case: "toolUse", value: { id: "c1", name: "read", input: { path: "ä.txt" } } } },
        ],
      }),
    ];
    const joined = `héllo${"ok "}${JSON.stringify({ path: "ä.txt" })}read`;
    const expected = BigInt(Math.ceil(Buffer.byteLength(joined, "utf8") / 4));
    expect(estimateInputTokens(messages, [], [])).toBe(expected);
    expect(estimateInputTokens(messages, [], [])).toBe(expected);
    expect(estimateInputTokens(messages.slice(1), [], [])).toBe(
      BigInt(Math.ceil(Buffer.byteLength(joined.slice("héllo".length), "utf8") / 4)),
    );
  });
});
