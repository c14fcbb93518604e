// The kernel's FrontendPort (the hub): session control events with request_id echo,
// backfill of an attached session through the Render path, broadcast to every
// subscriber, pending requests for a late joiner, replay-only and re-open semantics,
// slash commands, and FrontendService.Attach served on a plugin's broker connection.
import { FrontendErrorCategory, StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, modelError, reply, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const PROFILE = `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools          = ["tools.*"]
  slash_commands = ["review"]
}
agent_profile "one_turn" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools     = ["tools.*"]
  max_turns = 1
}`;

async function kernel(scripts: Record<string, unknown> = {}): Promise<TestKernel> {
  return h.kernel({ hcl: PROFILE, scripts });
}

describe("session control", () => {
  it("answers every control event on the asking connection, echoing request_id", async () => {
    const k = await kernel({ ctl: { turns: [reply("hi")] } });
    const c = k.client();
    c.send({ event: { case: "hello", value: { protocolVersion: 1 } } });
    c.send({ event: { case: "createSession", value: { requestId: "r1", profile: "", initialPrompt: [] } } });
    const created = await c.waitFor((e) => e.requestId === "r1");
    expect(created.event.case).toBe("sessionCreated");
    const id = created.sessionId;
    expect(created.event.case === "sessionCreated" && created.event.value.info?.status).toBe(
      SessionStatus.RUNNING,
    );

    c.send({ event: { case: "listSessions", value: { requestId: "r2", rootsOnly: true } } });
    const list = await c.waitFor((e) => e.requestId === "r2");
    expect(list.event.case === "sessionList" && list.event.value.sessions.map((s) => s.sessionId)).toEqual([
      id,
    ]);
    expect(list.sessionId).toBe("");

    c.send({ event: { case: "detachSession", value: { requestId: "r3", sessionId: id } } });
    expect((await c.waitFor((e) => e.requestId === "r3")).event.case).toBe("sessionDetached");

    const failures: Array<[string, object, FrontendErrorCategory]> = [
      [
        "r4",
        { case: "attachSession", value: { requestId: "r4", sessionId: "01JZZZZZZZZZZZZZZZZZZZZZZZ" } },
        FrontendErrorCategory.SESSION_NOT_FOUND,
      ],
      [
        "r5",
        { case: "createSession", value: { requestId: "r5", profile: "nope" } },
        FrontendErrorCategory.SESSION_CREATE_FAILED,
      ],
      [
        "r6",
        { case: "createSession", value: { requestId: "r6", workingDirectory: "/definitely/not/here" } },
        FrontendErrorCategory.SESSION_CREATE_FAILED,
      ],
      [
        "r7",
        { case: "listSessions", value: { requestId: "r7", parentSessionId: "01JZZZZZZZZZZZZZZZZZZZZZZZ" } },
        FrontendErrorCategory.SESSION_NOT_FOUND,
      ],
    ];
    for (const [rid, event, category] of failures) {
      c.send({ event: event as never });
      const e = await c.waitFor((ev) => ev.requestId === rid);
      expect(e.event.case === "error" && e.event.value.error?.category).toBe(category);
    }
    // Session-scoped events need a session this connection is attached to.
    c.send({ event: { case: "userMessage", value: { content: [] } } });
    c.send({
      sessionId: id,
      event: { case: "userMessage", value: { content: [{ block: { case: "text", value: { text: "x" } } }] } },
    });
    const errs = await c.waitFor(
      (e) => e.event.case === "error" && e.requestId === undefined && e.sessionId === id,
    );
    expect(errs.event.case === "error" && errs.event.value.error?.category).toBe(
      FrontendErrorCategory.INVALID_CLIENT_EVENT,
    );
    expect(c.of("error").filter((e) => e.requestId === undefined)).toHaveLength(2);
    await k.close();
  });

  it("refuses a profile without a usable model before any session file exists", async () => {
    const k = await h.kernel({
      hcl: `${PROFILE}
agent_profile "broken" {
  model {
    primary {
      provider = "model"
      id       = "no-such-model"
    }
  }
}`,
    });
    const c = k.client();
    c.send({ event: { case: "createSession", value: { requestId: "b", profile: "broken" } } });
    const e = await c.waitFor((ev) => ev.requestId === "b");
    expect(e.event.case === "error" && e.event.value.error?.category).toBe(
      FrontendErrorCategory.SESSION_CREATE_FAILED,
    );
    expect(e.event.case === "error" && e.event.value.error?.message).toContain("no usable model");
    c.send({ event: { case: "listSessions", value: { requestId: "l" } } });
    const list = await c.waitFor((ev) => ev.requestId === "l");
    expect(list.event.case === "sessionList" && list.event.value.sessions).toEqual([]);
    await k.close();
  });

  it("backfills an attaching connection through the Render path, unicast, then streams live events", async () => {
    const k = await kernel({
      backfill: { turns: [calls(tool("r", "tools__read", { path: "a" })), reply("read it")] },
    });
    const a = k.client();
    const id = await a.create("[backfill] read a");
    await a.finished(id);
    const seenByA = a.events.length;

    const b = k.client();
    b.send({ event: { case: "attachSession", value: { requestId: "att", sessionId: id } } });
    const done = await b.next("backfillComplete");
    const file = k.file(id);
    expect(done.lastSequence).toBe(BigInt(file.events.at(-1)!.sequence));
    const kinds = b.events.map((e) => e.event.case);
    expect(kinds[0]).toBe("sessionAttached");
    // One render per event with something to show: the assistant message holding only the
    // tool call and the user message holding only its result render to nothing (the
    // tool_call and tool_result events show them), so each call appears once.
    expect(file.kinds()).toEqual(["message", "message", "tool_call", "tool_result", "message", "message"]);
    expect(kinds.slice(1, -1)).toEqual(["render", "render", "render", "render"]);
    expect(kinds.at(-1)).toBe("backfillComplete");
    const trees = (c: typeof a) => c.of("render", id).map((e) => JSON.stringify(e.event.value.content));
    expect(trees(b)).toEqual(trees(a)); // the backfill reads exactly like the live session
    expect(trees(b).filter((t) => t.includes("tools__read"))).toEqual([]);
    expect(trees(b).filter((t) => t.includes("test-tools rendered tool_"))).toHaveLength(2);
    expect(b.events.every((e) => e.sessionId === id)).toBe(true);
    expect(b.events[0]!.requestId).toBe("att");
    const attached = b.events[0]!.event;
    expect(attached.case === "sessionAttached" && attached.value.replayOnly).toBe(true);
    // The user's prompt comes back rendered as text.
    const first = b.events[1]!.event;
    const tree = first.case === "render" ? first.value.content?.content?.root : undefined;
    expect(JSON.stringify(tree)).toContain("[backfill] read a");
    // Nothing of the backfill reached the connection that was already there.
    expect(a.events.length).toBe(seenByA);
    await k.close();
  });

  it("broadcasts a session's events identically to every subscriber and re-sends pending requests to a late joiner", async () => {
    const k = await kernel({
      multi: { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("ok")] },
    });
    const a = k.client();
    const id = await a.create("[multi] go");
    const perm = await a.next("permissionRequest");
    const b = k.client();
    b.send({ event: { case: "attachSession", value: { requestId: "att", sessionId: id } } });
    await b.next("backfillComplete");
    const late = await b.next("permissionRequest");
    expect(late.planItem?.id).toBe(perm.planItem?.id);
    const fromB = b.events.length;
    b.send({
      sessionId: id,
      event: { case: "planDecision", value: { planItemId: perm.planItem!.id, decision: 1, scope: 1 } },
    });
    await a.finished(id);
    await b.finished(id, fromB);
    const tail = (events: typeof a.events, from: number) =>
      events
        .slice(from)
        .filter((e) => e.event.case !== "error")
        .map((e) => e.event.case);
    const aFrom = a.events.findIndex((e) => e.event.case === "permissionRequest") + 1;
    expect(tail(b.events, fromB)).toEqual(tail(a.events, aFrom));
    await k.close();
  });

  it("refuses new turns on a plain attach to a finished session, and re-opens it on resume", async () => {
    const k = await kernel({
      reopen: { turns: [reply("first answer"), reply("second answer")] },
    });
    const a = k.client();
    const id = await a.create("[reopen] hello");
    expect(await a.finished(id)).toBe(SessionStatus.COMPLETED);
    const text = (t: string) => ({ content: [{ block: { case: "text" as const, value: { text: t } } }] });

    const viewer = k.client();
    viewer.send({ event: { case: "attachSession", value: { requestId: "v", sessionId: id } } });
    await viewer.next("backfillComplete");
    viewer.send({ sessionId: id, event: { case: "userMessage", value: text("more") } });
    const refused = await viewer.next("error");
    expect(refused.error?.category).toBe(FrontendErrorCategory.SESSION_REPLAY_ONLY);

    const resumer = k.client();
    resumer.send({ event: { case: "resumeSession", value: { requestId: "res", sessionId: id } } });
    const opened = await resumer.next("sessionAttached");
    expect(opened.replayOnly).toBe(false);
    await resumer.next("backfillComplete");
    const from = resumer.events.length;
    resumer.send({ sessionId: id, event: { case: "userMessage", value: text("and then?") } });
    const reopened = await resumer.next(
      "sessionStatusUpdate",
      (v) => v.status === SessionStatus.RUNNING,
      from,
    );
    expect(reopened.previousStatus).toBe(SessionStatus.COMPLETED);
    expect(await resumer.finished(id, from)).toBe(SessionStatus.COMPLETED);
    const second = k.requests("reopen")[1]!.request.messages;
    expect(second.map((m: { role: string }) => m.role)).toEqual(["ROLE_USER", "ROLE_ASSISTANT", "ROLE_USER"]);
    await k.close();
  });

  it("queues a message sent during a run and runs it next, re-opening the session", async () => {
    const k = await kernel({
      queued: {
        turns: [
          calls(tool("w", "tools__write", { path: "a", content: "1" })),
          reply("first"),
          reply("second"),
        ],
      },
    });
    const a = k.client();
    const id = await a.create("[queued] one");
    const perm = await a.next("permissionRequest");
    a.send({
      sessionId: id,
      event: {
        case: "userMessage",
        value: { content: [{ block: { case: "text", value: { text: "two" } } }] },
      },
    });
    a.send({
      sessionId: id,
      event: { case: "planDecision", value: { planItemId: perm.planItem!.id, decision: 1, scope: 1 } },
    });
    await a.finished(id);
    const secondRun = await a.next("sessionStatusUpdate", (v) => v.status === SessionStatus.RUNNING);
    expect(secondRun.previousStatus).toBe(SessionStatus.COMPLETED);
    const from = a.events.findIndex(
      (e) => e.event.case === "sessionStatusUpdate" && e.event.value.status === SessionStatus.RUNNING,
    );
    expect(await a.finished(id, from)).toBe(SessionStatus.COMPLETED);
    const last = k.requests("queued").at(-1)!.request.messages;
    expect(last.at(-1).content[0].text.text).toBe("two");
    expect(last).toHaveLength(5);
    await k.close();
  });

  it("rebuilds the history from the session file when a new kernel resumes it", async () => {
    const k = await kernel({
      persisted: {
        turns: [calls(tool("r", "tools__read", { path: "a" })), reply("first"), reply("after resume")],
      },
    });
    const s = await k.kernel.startSession({ prompt: "[persisted] hello" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    await k.close();

    const k2 = await h.kernel({ hcl: PROFILE, reuse: k });
    const handle = await k2.kernel.resumeSession(s.id);
    handle.send("[persisted] continue");
    expect(await handle.idle()).toBe(SessionStatus.COMPLETED);
    const messages = k2.requests("persisted")[2]!.request.messages;
    expect(messages).toHaveLength(5);
    expect(messages[1].content[0].toolUse.name).toBe("tools__read");
    expect(messages[2].content[0].toolResult.toolUseId).toBe("r");
    await k2.close();
  });

  it("leaves no session RUNNING in its file after shutdown, even one that never ran", async () => {
    const k = await kernel();
    const idle = await k.kernel.startSession();
    expect(idle.status()).toBe(SessionStatus.RUNNING);
    await k.close();
    expect(k.file(idle.id).meta.status).toBe(SessionStatus.CANCELLED);
  });

  it("keeps a failed session open: the next message re-opens it, on resume too", async () => {
    const k = await kernel({ broken: { turns: [[modelError("auth_error"), reply("fixed")]] } });
    const a = k.client();
    const id = await a.create("[broken] hello");
    expect(await a.finished(id)).toBe(SessionStatus.FAILED);
    const say = (t: string) =>
      a.send({
        sessionId: id,
        event: { case: "userMessage", value: { content: [{ block: { case: "text", value: { text: t } } }] } },
      });
    const from = a.events.length;
    say("try again");
    const reopened = await a.next("sessionStatusUpdate", (v) => v.status === SessionStatus.RUNNING, from);
    expect(reopened.previousStatus).toBe(SessionStatus.FAILED);
    expect(await a.finished(id, from)).toBe(SessionStatus.COMPLETED);
    expect(a.events.slice(from).some((e) => e.event.case === "error")).toBe(false);
    // The failure is in the session file (and the log), never in what the model is sent.
    const failed = k
      .file(id)
      .messages()
      .find((m) => m.syntheticReason === "turn_failed");
    expect(failed?.message?.content[0]?.block.value).toMatchObject({
      text: expect.stringMatching(/auth_error/),
    });
    expect(
      k.logs.some((l) => l.level === "error" && /the turn failed: model_error auth_error/.test(l.message)),
    ).toBe(true);
    const sent = k.requests("broken")[1]!.request.messages;
    expect(sent.map((m: { role: string }) => m.role)).toEqual(["ROLE_USER", "ROLE_USER"]);

    const b = k.client();
    b.send({ event: { case: "resumeSession", value: { requestId: "res", sessionId: id } } });
    const attached = await b.next("sessionAttached", (_v, e) => e.requestId === "res");
    expect(attached.replayOnly).toBe(false);
    await k.close();
  });

  it("keeps a session that reached a bound replay-only, even on resume", async () => {
    const k = await kernel({
      bounded: { turns: [calls(tool("r", "tools__read", { path: "a" })), reply("final")] },
    });
    const s = await k.kernel.startSession({ prompt: "[bounded] go", profile: "one_turn" });
    expect(await s.idle()).toBe(SessionStatus.ERROR_MAX_TURNS);
    const a = k.client();
    a.send({ event: { case: "resumeSession", value: { requestId: "res", sessionId: s.id } } });
    expect((await a.next("sessionAttached", (_v, e) => e.requestId === "res")).replayOnly).toBe(true);
    a.send({
      sessionId: s.id,
      event: {
        case: "userMessage",
        value: { content: [{ block: { case: "text", value: { text: "more" } } }] },
      },
    });
    expect((await a.next("error")).error?.category).toBe(FrontendErrorCategory.SESSION_REPLAY_ONLY);
    await expect(k.kernel.resumeSession(s.id)).rejects.toThrow(/replay/);
    await k.close();
  });
});

describe("rendering and live output", () => {
  it("renders persisted events through their producer's Render, with kind and schema_version", async () => {
    const k = await kernel({
      rendered: {
        turns: [
          { events: [{ emit: "remember me" }, ...calls(tool("c", "tools__chunks", { n: 1 })).events] },
          reply("ok"),
        ],
      },
    });
    const a = k.client();
    const id = await a.create("[rendered] go");
    await a.finished(id);
    const b = k.client();
    b.send({ event: { case: "attachSession", value: { requestId: "att", sessionId: id } } });
    await b.next("backfillComplete");
    const texts = b
      .of("render")
      .map((e) => e.event.value.content?.content?.root?.node)
      .map((n) => (n?.case === "text" ? n.value.content : ""));
    expect(texts).toContain("scripted-model rendered memory_write v1");
    expect(texts).toContain("test-tools rendered tool_call v1");
    expect(texts).toContain("test-tools rendered tool_result v1");
    // Live subscribers got the same renders as they happened.
    const live = a.of("render").map((e) => JSON.stringify(e.event.value.content));
    expect(live).toContain(
      JSON.stringify(
        b.of("render").find((e) => JSON.stringify(e).includes("memory_write"))!.event.value.content,
      ),
    );
    await k.close();
  });

  it("forwards tool output live as stream deltas and records it in arrival order", async () => {
    const k = await kernel({ chunks: { turns: [calls(tool("c", "tools__chunks", { n: 3 })), reply("ok")] } });
    const a = k.client();
    const id = await a.create("[chunks] go");
    await a.finished(id);
    const deltas = a.of("streamDelta").filter((e) => e.event.value.kind === StreamDeltaKind.TOOL_OUTPUT);
    expect(deltas.map((e) => [k.vendorId(id, e.event.value.targetId), e.event.value.text])).toEqual([
      ["c", "line 1\n"],
      ["c", "line 2\n"],
      ["c", "line 3\n"],
    ]);
    const output = k
      .file(id)
      .toolResults()[0]!
      .output.map((o) => new TextDecoder().decode(o.data));
    expect(output).toEqual(["line 1\n", "line 2\n", "line 3\n"]);
    await k.close();
  });
});

describe("slash commands", () => {
  it("registers the profile's commands and expands a prompt-expansion command into a user message", async () => {
    const k = await kernel({ slash: { turns: [reply("reviewed")] } });
    const a = k.client();
    const id = await a.create("");
    a.send({ event: { case: "attachSession", value: { requestId: "att", sessionId: id } } });
    const attached = await a.next("sessionAttached");
    const registered = attached.slashCommandRegistry?.commands.map((c) => [
      c.provider,
      c.spec?.name,
      c.spec?.dispatch,
    ]);
    expect(registered).toEqual([
      ["tools", "review", Dispatch.PROMPT_EXPANSION],
      ["tools", "wipe", Dispatch.DIRECT_INVOKE],
      ["tools", "peek", Dispatch.DIRECT_INVOKE],
    ]);
    await a.next("backfillComplete");
    a.send({ sessionId: id, event: { case: "slashCommand", value: { name: "review", args: "main.ts" } } });
    expect(await a.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(k.requests("slash")[0]!.request.messages[0].content[0].text.text).toBe("[slash] review main.ts");
    a.send({ sessionId: id, event: { case: "slashCommand", value: { name: "nope", args: "" } } });
    expect((await a.next("error")).error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
    await k.close();
  });
});

describe("FrontendService.Attach over the broker", () => {
  it("refuses the Attach stream on the kernel connection of a plugin that is no frontend", async () => {
    // The broker socket exists only for a plugin process. A tool plugin attaching could
    // list, create and steer sessions and answer their permission requests: only a plugin
    // serving FrontendService stands for a human (the terminal UI's own Attach is in
    // providers/tui and the pty tests).
    const k = await h.kernel({
      hcl: PROFILE,
      transport: "process",
      scripts: { probe: { turns: [calls(tool("p", "tools__probe_attach", {})), reply("ok")] } },
    });
    const s = await k.kernel.startSession({ prompt: "[probe] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const result = k.file(s.id).toolResults()[0]!;
    expect(result.outcome.case === "result" && result.outcome.value.payload).toEqual({
      refused: expect.stringMatching(/^7 plugin "tools" is not a frontend/),
    });
    expect(k.file(s.id).events.some((e) => e.kind === EventKind.TOOL_RESULT)).toBe(true);
    await k.close();
  });
});
