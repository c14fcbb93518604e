// Reliability (issue 15, part A): bad input is an error and the session goes on, a failed
// turn leaves the session open, breakers that count, and a session resumed after its
// kernel died mid-turn is a valid conversation. Real plugin subprocesses, fake clock.
import { copyFileSync, existsSync, mkdirSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema, PlanEventSchema, ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { ApplyOutcome } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import type { StoredEvent } from "@pluggableharness/state";
import { afterAll, describe, expect, it } from "vitest";
import { StoredInputs, storedPlanEvent, storedToolCallEvent } from "../../src/frontends/stored-inputs.ts";
import { rebuildConversation } from "../../src/loop/session/resume.ts";
import {
  calls,
  Harness,
  type Loose,
  modelError,
  reply,
  type TestKernel,
  tool,
  toolUsePairing,
  usage,
} from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

let current: TestKernel | undefined;
async function freshKernel(spec: Parameters<Harness["kernel"]>[0] = {}): Promise<TestKernel> {
  await current?.close();
  current = await h.kernel({ headlessAsk: "allow", ...spec });
  return current;
}

/** Resolves once `ok()` holds, checked whenever something is written to `dir`. */
function until(dir: string, ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!ok()) return;
      watcher.close();
      clearTimeout(deadline);
      resolve();
    };
    const watcher = watch(dir, check);
    const deadline = setTimeout(() => {
      watcher.close();
      reject(new Error("timed out"));
    }, timeoutMs);
    check();
  });
}

/** `{"a":{"a":…{"x":1}…}}` nested `depth` objects deep, as argument JSON text. */
function nestedArgs(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{"x":1}${"}".repeat(depth - 1)}`;
}

describe("tool arguments nested deeper than the wire carries", () => {
  for (const depth of [48, 1000, 100_000]) {
    it(`depth ${depth}: the call gets invalid_arguments, and the session goes on`, async () => {
      const k = await freshKernel();
      const scenario = `deep${depth}`;
      k.script(scenario, {
        turns: [
          {
            events: [
              { toolRaw: { id: "c1", name: "tools__read", args: nestedArgs(depth) } },
              usage(5, 5),
              { stop: "tool_use" },
            ],
          },
          reply("recovered"),
          reply("still here"),
        ],
      });
      const s = await k.kernel.startSession({ prompt: `[${scenario}] go` });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      const file = k.file(s.id);
      const [result] = file.toolResults();
      expect(result?.outcome.case).toBe("error");
      expect(result?.outcome.value).toMatchObject({
        category: ToolErrorCategory.INVALID_ARGUMENTS,
        message: expect.stringMatching(/nested more than 32 levels/),
      });
      // Nothing deep reached the history: the second request carries the call with empty input.
      const second = k.requests(scenario)[1]?.request;
      expect(JSON.stringify(second).length).toBeLessThan(20_000);
      expect(toolUsePairing(file.messages())).toEqual({ uses: ["c1"], results: ["c1"] });
      // The session takes the next message, and the model sees the whole history again.
      s.send("and now?");
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      expect(k.requests(scenario)).toHaveLength(3);
    });
  }
});

describe("a failed turn is not a dead session", () => {
  it("a new kernel resumes a session whose turn failed, and the next message runs", async () => {
    const k = await freshKernel();
    k.script("failedturn", { turns: [[modelError("auth_error"), reply("works now")]] });
    const s = await k.kernel.startSession({ prompt: "[failedturn] hello" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    await k.close();
    current = await h.kernel({ headlessAsk: "allow", reuse: k });
    const again = await current.kernel.resumeSession(s.id);
    again.send("[failedturn] the key is fixed");
    expect(await again.idle()).toBe(SessionStatus.COMPLETED);
    const messages = current.requests("failedturn")[1]!.request.messages;
    // The failure record is not part of the conversation.
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["ROLE_USER", "ROLE_USER"]);
  });
});

describe("breakers that count", () => {
  const NO_WRITES = `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools     = ["tools.*"]
  max_turns = 45
}
policy "no_writes" {
  match  = { provider = "tools", tool_name = "write" }
  action = "deny"
}`;

  it("a denied call interleaved with allowed ones still trips the denial breaker", async () => {
    const k = await freshKernel({ hcl: NO_WRITES });
    k.script("interleave", {
      turns: [
        calls(
          tool("w", "tools__write", { path: "x", content: "1" }),
          tool("r", "tools__read", { path: "a" }),
        ),
      ],
      repeat: true,
    });
    const s = await k.kernel.startSession({ prompt: "[interleave] go" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    const file = k.file(s.id);
    expect(file.planItems.filter((p) => p.decisionText === "deny")).toHaveLength(3);
    expect(k.requests("interleave")).toHaveLength(4); // three turns, then the final-answer turn
  });

  it("a different denied call each turn, among allowed ones, trips it after five such turns", async () => {
    const k = await freshKernel({ hcl: NO_WRITES });
    const turns = [];
    for (let i = 0; i < 40; i++)
      turns.push(
        calls(
          tool(`w${i}`, "tools__write", { path: `f${i}`, content: "1" }),
          tool(`r${i}`, "tools__read", { path: "a" }),
        ),
      );
    k.script("halfdenied", { turns });
    const s = await k.kernel.startSession({ prompt: "[halfdenied] go" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    expect(k.file(s.id).planItems.filter((p) => p.decisionText === "deny")).toHaveLength(5);
  });
});

describe("resuming a session whose kernel stopped mid-turn", () => {
  /**
   * A copy of the session file taken while a call is held: what a kernel killed at that
   * moment leaves behind (every committed transaction is in the file or its WAL).
   */
  function snapshot(k: TestKernel, sessionId: string, into: string): void {
    mkdirSync(into, { recursive: true });
    for (const suffix of [".sqlite", ".sqlite-wal"]) {
      const from = join(k.stateDir, `${sessionId}${suffix}`);
      if (existsSync(from)) copyFileSync(from, join(into, `${sessionId}${suffix}`));
    }
  }

  async function stopWhile(k: TestKernel, scenario: string, held: string, script: unknown) {
    k.script(scenario, script);
    const s = await k.kernel.startSession({ prompt: `[${scenario}] go` });
    await until(k.logDir, () =>
      k.invocations().some((e) => e["phase"] === "start" && k.vendorId(s.id, e["callId"]) === held),
    );
    const copy = join(k.root, `killed-${scenario}`);
    snapshot(k, s.id, copy);
    writeFileSync(join(k.logDir, `release-${s.id}-${k.callId(s.id, held)}`), "");
    await s.idle();
    return { id: s.id, copy };
  }

  it("answers every open call once, says what may have applied, and records it for the audit", async () => {
    const k = await freshKernel();
    const { id, copy } = await stopWhile(k, "killedwrite", "w", {
      turns: [
        calls(
          tool("r", "tools__read", { path: "a" }),
          tool("w", "tools__write", { path: "b", content: "x", hold: true }),
        ),
        reply("done"),
        reply("after the resume"),
      ],
    });
    await k.close();
    // A new kernel on the copy: the kernel that wrote it is gone.
    const k2 = await h.kernel({ headlessAsk: "allow", reuse: k, stateDir: copy });
    current = k2;
    const s = await k2.kernel.resumeSession(id);
    expect(s.status()).toBe(SessionStatus.CANCELLED);
    s.send("[killedwrite] go on");
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const sent = k2.requests("killedwrite").at(-1)!.request.messages;
    expect(sent.map((m: Loose) => m.role)).toEqual(["ROLE_USER", "ROLE_ASSISTANT", "ROLE_USER", "ROLE_USER"]);
    const results = sent[2].content.map((b: Loose) => b.toolResult);
    expect(results.map((r: Loose) => r.toolUseId)).toEqual(["r", "w"]);
    // The read had finished: its recorded result. The write was being applied: it may have.
    expect(results[0].content[0].text.text).toContain("contents of a");
    expect(results[1].isError).toBe(true);
    expect(results[1].content[0].text.text).toMatch(/^interrupted: .*may or may not have taken effect/);

    const file = k2.file(id);
    const apply = file.applies().at(-1)!;
    expect(apply.items).toEqual([
      expect.objectContaining({ toolCallId: file.callId("w"), outcome: ApplyOutcome.INTERRUPTED }),
    ]);
    const interrupted = file.toolResults().filter((r) => r.toolCallId === file.callId("w"));
    expect(interrupted).toHaveLength(1);
    expect(interrupted[0]!.outcome.value).toMatchObject({ category: ToolErrorCategory.CANCELLED });
    expect(toolUsePairing(file.messages())).toEqual({ uses: ["r", "w"], results: ["r", "w"] });

    // Exactly one: a second resume finds nothing left to answer.
    await k2.close();
    const k3 = await h.kernel({ headlessAsk: "allow", reuse: k, stateDir: copy });
    current = k3;
    const again = await k3.kernel.resumeSession(id);
    expect(again.status()).toBe(SessionStatus.COMPLETED);
    expect(k3.file(id).events.length).toBe(file.events.length);
  });

  it("a read that never finished, and a write never approved, were not applied", async () => {
    const k = await freshKernel();
    const { id, copy } = await stopWhile(k, "killedread", "r", {
      turns: [
        calls(
          tool("r", "tools__read", { path: "a", hold: true }),
          tool("w", "tools__write", { path: "b", content: "x" }),
        ),
        reply("done"),
        reply("after the resume"),
      ],
    });
    await k.close();
    const k2 = await h.kernel({ headlessAsk: "allow", reuse: k, stateDir: copy });
    current = k2;
    const s = await k2.kernel.resumeSession(id);
    s.send("[killedread] go on");
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const results = k2
      .requests("killedread")
      .at(-1)!
      .request.messages[2].content.map((b: Loose) => b.toolResult);
    expect(results[0].content[0].text.text).toMatch(
      /^interrupted: the agent stopped before this call finished/,
    );
    expect(results[1].content[0].text.text).toMatch(/before this call was approved; it was not applied/);
    expect(k2.file(id).applies()).toHaveLength(0);
  });
});

const KERNEL_PRODUCER = { category: PluginCategory.KERNEL, name: "kernel", version: "0.1.0" };
let seq = 0;
/** A stored event, as a reader hands it out. */
const event = (kind: EventKind, payload: Uint8Array, producer = KERNEL_PRODUCER): StoredEvent => ({
  sequence: ++seq,
  id: String(seq),
  timestamp: "",
  kind,
  kindText: "",
  producer,
  schemaVersion: "1",
  payload,
});

describe("rebuildConversation", () => {
  const msg = (role: Role, content: unknown[], syntheticReason = "") =>
    event(
      EventKind.MESSAGE,
      toBinary(
        MessageEventSchema,
        create(MessageEventSchema, {
          message: { role, content: content as never },
          turnId: "t",
          syntheticReason,
        }),
      ),
    );
  const say = (t: string) => ({ block: { case: "text", value: { text: t } } });
  const use = (id: string) => ({ block: { case: "toolUse", value: { id, name: "tools__read", input: {} } } });
  const answer = (id: string) => ({
    block: { case: "toolResult", value: { toolUseId: id, content: [say("ok")], isError: false } },
  });
  const shape = (history: ReturnType<typeof rebuildConversation>["history"]) =>
    history.map((m) => m.content.map((b) => `${m.role === Role.USER ? "u" : "a"}:${b.block.case}`).join(","));

  it("answers an open call in the next user message, results first", () => {
    const r = rebuildConversation([
      msg(Role.USER, [say("hi")]),
      msg(Role.ASSISTANT, [use("a"), use("b")]),
      msg(Role.USER, [answer("a"), say("and?")]),
    ]);
    expect(shape(r.history)).toEqual(["u:text", "a:toolUse,a:toolUse", "u:toolResult,u:toolResult,u:text"]);
    expect(r.dangling).toHaveLength(0);
  });

  it("inserts a user message of results before the next assistant message, and reports the open tail", () => {
    const r = rebuildConversation([
      msg(Role.USER, [say("hi")]),
      msg(Role.ASSISTANT, [use("a")]),
      msg(Role.ASSISTANT, [say("odd")]),
      msg(Role.USER, [say("more")]),
      msg(Role.ASSISTANT, [use("c")]),
    ]);
    expect(shape(r.history)).toEqual([
      "u:text",
      "a:toolUse",
      "u:toolResult",
      "a:text",
      "u:text",
      "a:toolUse",
    ]);
    expect(r.dangling.map((d) => d.use.id)).toEqual(["c"]);
  });

  it("skips records and events that do not decode", () => {
    const r = rebuildConversation([
      msg(Role.USER, [say("hi")]),
      msg(Role.ASSISTANT, [say("failed")], "turn_failed"),
      event(EventKind.TOOL_RESULT, new Uint8Array([0xff, 0xff, 0xff])),
      event(EventKind.MESSAGE, new Uint8Array([0x0a, 0xff])),
      msg(Role.ASSISTANT, [say("fine")]),
    ]);
    expect(shape(r.history)).toEqual(["u:text", "a:text"]);
  });
});

describe("large inputs are stored once", () => {
  it("tool_call and plan events leave a large input out; StoredInputs puts it back", () => {
    const big = { path: "big", content: "x".repeat(5_000) };
    const small = { path: "a", content: "y" };
    const message = event(
      EventKind.MESSAGE,
      toBinary(
        MessageEventSchema,
        create(MessageEventSchema, {
          message: {
            role: Role.ASSISTANT,
            content: [
              { block: { case: "toolUse", value: { id: "b", name: "w", input: big } } },
              { block: { case: "toolUse", value: { id: "s", name: "w", input: small } } },
            ],
          },
        }),
      ),
    );
    const callOf = (id: string, args: typeof big) =>
      storedToolCallEvent(create(ToolCallEventSchema, { call: { id, toolName: "w", arguments: args } }));
    const storedBig = callOf("b", big);
    expect(storedBig.argumentsInMessage).toBe(true);
    expect(storedBig.call?.arguments).toEqual({});
    expect(callOf("s", small).argumentsInMessage).toBe(false);
    const plan = storedPlanEvent(
      create(PlanEventSchema, {
        plan: {
          items: [
            { id: "i1", toolCallId: "b", input: big },
            { id: "i2", toolCallId: "s", input: small },
          ],
        },
      }),
    );
    expect(plan.inputsInMessage).toEqual(["b"]);
    const tool = { category: PluginCategory.TOOL, name: "fs", version: "1" };
    const inputs = new StoredInputs();
    const [, restoredCall, restoredPlan] = [
      ...inputs.all([
        message,
        event(EventKind.TOOL_CALL, toBinary(ToolCallEventSchema, storedBig), tool),
        event(EventKind.PLAN, toBinary(PlanEventSchema, plan)),
      ]),
    ];
    expect(fromBinary(ToolCallEventSchema, restoredCall!.payload).call?.arguments).toEqual(big);
    const items = fromBinary(PlanEventSchema, restoredPlan!.payload).plan!.items;
    expect(items.map((i) => i.input)).toEqual([big, small]);
  });
});
