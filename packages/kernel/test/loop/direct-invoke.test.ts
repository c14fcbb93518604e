// Calls the operator makes without a model turn: direct-invoke slash commands and
// action triggers go through the ordinary gate (hooks, policy, plan and asks, apply),
// never reach the model, and are reported to it on its next turn as a user-role
// message; bad input is refused before anything runs.
import type { JsonObject } from "@bufbuild/protobuf";
import { ClientDecision, FrontendErrorCategory } from "@pluggableharness/protocol/frontend";
import { ApplyOutcome, PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, type Loose, reply, type TestClient, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const HOOKS = [
  "session-start",
  "pre-model-call",
  "pre-tool-call",
  "plan-ready",
  "post-tool-call",
  "post-apply",
  "session-end",
]
  .map(
    (point) => `
hook "${point}" {
  provider = "observer"
  mode     = "${point === "plan-ready" || point === "pre-tool-call" ? "veto" : "observe"}"
}`,
  )
  .join("\n");

async function kernel(hcl: string, scripts: Record<string, unknown>): Promise<TestKernel> {
  return h.kernel({ providers: [{ name: "observer", fixture: "hooks" }], hcl: `${hcl}\n${HOOKS}`, scripts });
}

const started = (k: TestKernel, tool?: string) =>
  k.invocations().filter((e) => e["phase"] === "start" && (tool === undefined || e["tool"] === tool));

/** Sends a client event and waits for the session to settle again (a terminal status after `from`). */
async function runAndSettle(c: TestClient, id: string, send: () => void): Promise<SessionStatus> {
  const from = c.events.length;
  send();
  return c.finished(id, from);
}

function lastMessage(k: TestKernel, id: string) {
  const m = k.file(id).messages().at(-1)!;
  const b = m.message!.content[0]!.block;
  return { reason: m.syntheticReason, role: m.message!.role, text: b.case === "text" ? b.value.text : "" };
}

describe("direct-invoke slash commands", () => {
  it("runs the command's tool through the gate with an ask and no model turn; the model sees the result next turn", async () => {
    const k = await kernel("", { di: { turns: [reply("hello"), reply("noted")] } });
    const c = k.client();
    const id = await c.create("[di] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const hooksBefore = k.hookLog().length;
    const eventsBefore = k.file(id).events.length;

    const from = c.events.length;
    c.send({ sessionId: id, event: { case: "slashCommand", value: { name: "wipe", args: "a.txt" } } });
    // A HIGH-risk resource: the default policy asks, so the plan goes to the human first.
    const ask = await c.next("permissionRequest", () => true, from);
    expect([ask.planItem?.provider, ask.planItem?.toolName, ask.planItem?.input]).toEqual([
      "tools",
      "remove",
      { path: "a.txt" },
    ]);
    expect(started(k, "remove")).toEqual([]);
    c.send({
      sessionId: id,
      event: {
        case: "planDecision",
        value: {
          planItemId: ask.planItem!.id,
          decision: ClientDecision.ALLOW,
          scope: PlanDecisionScope.ONCE,
        },
      },
    });
    expect(await c.finished(id, from)).toBe(SessionStatus.COMPLETED);

    expect(started(k, "remove").map((e) => e["args"])).toEqual([{ path: "a.txt" }]);
    expect(k.requests("di")).toHaveLength(1); // no model turn
    const points = k
      .hookLog()
      .slice(hooksBefore)
      .map((e: Loose) => e["point"]);
    expect(points).toEqual([
      "session-start",
      "pre-tool-call",
      "plan-ready",
      "post-tool-call",
      "post-apply",
      "session-end",
    ]);
    const f = k.file(id);
    expect(f.kinds().slice(eventsBefore)).toEqual(["tool_call", "plan", "tool_result", "apply", "message"]);
    expect(f.planItems.at(-1)).toMatchObject({ toolName: "remove", decidedBy: "policy:default" });
    expect(f.applies().at(-1)!.items[0]).toMatchObject({
      decision: PlanDecision.ALLOW,
      decidedBy: "human:once",
    });
    const report = lastMessage(k, id);
    expect(report.reason).toBe("direct_invoke");
    expect(report.text).toBe(
      '[kernel] The operator ran the slash command /wipe a.txt directly, without a model turn. It called tools__remove with {"path":"a.txt"}.\nResult: {"removed":"a.txt"}',
    );

    // The next turn carries the report as a user message, and no tool_use the model never made.
    expect(
      await runAndSettle(c, id, () =>
        c.send({
          sessionId: id,
          event: {
            case: "userMessage",
            value: { content: [{ block: { case: "text", value: { text: "and now?" } } }] },
          },
        }),
      ),
    ).toBe(SessionStatus.COMPLETED);
    const sent = k.requests("di")[1]!.request.messages as Loose[];
    expect(sent.map((m) => [m.role, m.content[0].text?.text ?? Object.keys(m.content[0])[0]])).toEqual([
      ["ROLE_USER", "[di] start"],
      ["ROLE_ASSISTANT", "hello"],
      ["ROLE_USER", report.text],
      ["ROLE_USER", "and now?"],
    ]);
    await k.close();
  });

  it("denies by policy without asking, runs data sources at once, and maps key=value arguments", async () => {
    const k = await kernel(
      `
policy "no_remove" {
  match  = { provider = "tools", tool_name = "remove" }
  action = "deny"
}`,
      { dd: { turns: [reply("hello")] } },
    );
    const c = k.client();
    const id = await c.create("[dd] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);

    const slash = (name: string, args: string) => () =>
      c.send({ sessionId: id, event: { case: "slashCommand", value: { name, args } } });
    expect(await runAndSettle(c, id, slash("wipe", "b.txt"))).toBe(SessionStatus.COMPLETED);
    expect(started(k, "remove")).toEqual([]);
    expect(c.of("permissionRequest", id)).toEqual([]);
    const denied = k.file(id).toolResults().at(-1)!;
    expect(denied.denied).toBe(true);
    expect(denied.outcome.case === "error" && denied.outcome.value.category).toBe(
      ToolErrorCategory.PERMISSION_DENIED,
    );
    expect(lastMessage(k, id).text).toContain('\nResult (error): Denied: denied by policy rule "no_remove"');

    expect(await runAndSettle(c, id, slash("peek", "path=d.txt hold=false"))).toBe(SessionStatus.COMPLETED);
    expect(started(k, "read").map((e) => e["args"])).toEqual([{ path: "d.txt", hold: false }]);
    expect(lastMessage(k, id).text).toContain('Result: {"path":"d.txt","content":"contents of d.txt"}');
    expect(k.requests("dd")).toHaveLength(1);
    await k.close();
  });
});

/** A first turn whose `offer` call shows these ActionNodes (the fixture renders its result as them). */
const offering = (...actions: Array<Record<string, unknown>>) =>
  calls(tool("offer", "tools__offer", { actions }));

describe("action triggers", () => {
  it("runs the node's tool like a direct-invoke command and reports it as the action", async () => {
    const k = await kernel("", {
      act: {
        turns: [
          offering({
            id: "open-c",
            label: "Open c",
            provider: "tools",
            toolName: "read",
            args: { path: "c.txt" },
          }),
          reply("hello"),
        ],
      },
    });
    const c = k.client();
    const id = await c.create("[act] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const status = await runAndSettle(c, id, () =>
      c.send({
        sessionId: id,
        event: {
          case: "actionTrigger",
          value: { nodeId: "open-c", provider: "tools", toolName: "read", args: { path: "c.txt" } },
        },
      }),
    );
    expect(status).toBe(SessionStatus.COMPLETED);
    expect(started(k, "read").map((e) => e["args"])).toEqual([{ path: "c.txt" }]);
    expect(lastMessage(k, id).text).toBe(
      '[kernel] The operator activated the action "open-c" directly, without a model turn. It called tools__read with {"path":"c.txt"}.\nResult: {"path":"c.txt","content":"contents of c.txt"}',
    );
    expect(k.requests("act")).toHaveLength(2);
    await k.close();
  });

  it("refuses actions never shown, altered echoes, unknown tools and arguments that do not fit, before anything runs", async () => {
    const k = await kernel("", {
      bad: {
        turns: [
          offering(
            { id: "n", label: "Nope", provider: "tools", toolName: "nope", args: {} },
            { id: "n5", label: "Bad path", provider: "tools", toolName: "read", args: { path: 5 } },
            { id: "open-c", label: "Open c", provider: "tools", toolName: "read", args: { path: "c.txt" } },
          ),
          reply("hello"),
        ],
      },
    });
    const c = k.client();
    const id = await c.create("[bad] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const eventsBefore = k.file(id).events.length;
    const startedBefore = started(k).length;
    const refused = async (event: Parameters<TestClient["send"]>[0]["event"]) => {
      const from = c.events.length;
      c.send({ sessionId: id, event });
      const e = await c.next("error", () => true, from);
      expect(e.error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
      return e.error!.message;
    };
    expect(
      await refused({
        case: "actionTrigger",
        value: { nodeId: "n", provider: "tools", toolName: "nope", args: {} },
      }),
    ).toContain("tools.nope is not one of this session's tools");
    expect(
      await refused({
        case: "actionTrigger",
        value: { nodeId: "n5", provider: "tools", toolName: "read", args: { path: 5 } },
      }),
    ).toContain("input schema");
    // Forged: an action nobody was shown, even for a real tool with valid arguments.
    expect(
      await refused({
        case: "actionTrigger",
        value: { nodeId: "wipe-a", provider: "tools", toolName: "remove", args: { path: "a" } },
      }),
    ).toBe('no action "wipe-a" was shown in this session');
    // Forged: a shown node id with other arguments, or pointed at another tool.
    const altered: Array<{ nodeId: string; provider: string; toolName: string; args: JsonObject }> = [
      { nodeId: "open-c", provider: "tools", toolName: "read", args: { path: "secret.txt" } },
      { nodeId: "open-c", provider: "tools", toolName: "remove", args: { path: "c.txt" } },
      { nodeId: "open-c", provider: "tools", toolName: "read", args: {} },
    ];
    for (const value of altered) {
      expect(await refused({ case: "actionTrigger", value })).toContain(
        'action "open-c" does not match the action shown',
      );
    }
    expect(await refused({ case: "actionTrigger", value: { nodeId: "n", toolName: "read" } })).toContain(
      "needs provider and tool_name",
    );
    expect(await refused({ case: "slashCommand", value: { name: "peek", args: "hold=soon" } })).toBe(
      '/peek: hold: "soon" is not true or false',
    );
    expect(await refused({ case: "slashCommand", value: { name: "peek", args: "" } })).toContain(
      "must have required property 'path'",
    );
    expect(started(k).slice(startedBefore)).toEqual([]);
    expect(k.file(id).events).toHaveLength(eventsBefore);
    await k.close();
  });

  it("is cancelled by an interrupt while the tool runs; the report says so", async () => {
    const k = await kernel(
      `
policy "slow_ok" {
  match  = { provider = "tools", tool_name = "slow" }
  action = "allow"
}`,
      {
        cut: {
          turns: [
            offering({
              id: "wait",
              label: "Wait",
              provider: "tools",
              toolName: "slow",
              args: { ms: 600_000 },
            }),
            reply("hello"),
          ],
        },
      },
    );
    const c = k.client();
    const id = await c.create("[cut] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const from = c.events.length;
    c.send({
      sessionId: id,
      event: {
        case: "actionTrigger",
        value: { nodeId: "wait", provider: "tools", toolName: "slow", args: { ms: 600_000 } },
      },
    });
    await c.next("streamDelta", (d) => d.text === "started\n", from);
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id, from)).toBe(SessionStatus.CANCELLED);
    const result = k.file(id).toolResults().at(-1)!;
    expect(result.outcome.case === "error" && result.outcome.value.category).toBe(
      ToolErrorCategory.CANCELLED,
    );
    expect(k.file(id).applies().at(-1)!.items[0]!.outcome).toBe(ApplyOutcome.CANCELLED);
    expect(lastMessage(k, id).text).toContain("\nResult: cancelled: ");
    expect(lastMessage(k, id).text).toContain("Output before the call stopped:\nstarted\n");
    await k.close();
  });
});
