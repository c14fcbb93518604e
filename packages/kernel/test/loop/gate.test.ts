// The plan/apply gate: policy per item, third-party vetoes, ask/allow/deny, decision
// scopes, corrected input, headless asks, plan mode, the data-source and interactive
// precheck, Preview, terminates_turn and scheduling per ConcurrencySpec.
import { existsSync, readFileSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ClientDecision, FrontendErrorCategory } from "@pluggableharness/protocol/frontend";
import { ApplyOutcome, PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestClient, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const decide = (
  c: TestClient,
  sessionId: string,
  planItemId: string,
  decision: ClientDecision,
  extra: { scope?: PlanDecisionScope; correctedInput?: Record<string, unknown>; reason?: string } = {},
) =>
  c.send({
    sessionId,
    event: {
      case: "planDecision",
      value: {
        planItemId,
        decision,
        scope: extra.scope ?? PlanDecisionScope.ONCE,
        ...(extra.correctedInput ? { correctedInput: extra.correctedInput as never } : {}),
        ...(extra.reason ? { reason: extra.reason } : {}),
      },
    },
  });

const started = (k: TestKernel, tool?: string) =>
  k.invocations().filter((e) => e["phase"] === "start" && (tool === undefined || e["tool"] === tool));

describe("policy and vetoes", () => {
  it("denies per item: a denied resource never runs and its tool_result carries the reason", async () => {
    const k = await h.kernel({
      hcl: `
policy "no_remove" {
  match  = { provider = "tools", tool_name = "remove" }
  action = "deny"
}
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}`,
      scripts: {
        deny: {
          turns: [
            calls(
              tool("w", "tools__write", { path: "a", content: "x" }),
              tool("r", "tools__remove", { path: "a" }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[deny] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k).map((e) => e["tool"])).toEqual(["write"]);
    const f = k.file(id);
    expect(f.planItems.map((p) => [p.toolName, p.decisionText, p.decidedBy])).toEqual([
      ["write", "allow", "writes_ok"],
      ["remove", "deny", "no_remove"],
    ]);
    const removed = f.toolResults().find((r) => r.toolName === "remove")!;
    expect(removed.denied).toBe(true);
    const seen = k.requests("deny")[1]!.request.messages.at(-1).content[1].toolResult;
    expect(seen.isError).toBe(true);
    expect(seen.content[0].text.text).toContain('denied by policy rule "no_remove"');
    expect(f.applies()[0]!.items.map((i) => i.outcome)).toEqual([ApplyOutcome.APPLIED, ApplyOutcome.DENIED]);
    await k.close();
  });

  it("lets a third-party veto subscriber at plan-ready deny the plan, after policy ran", async () => {
    const k = await h.kernel({
      providers: [
        { name: "guard", fixture: "hooks", attrs: { behavior: JSON.stringify('{"plan-ready":"deny"}') } },
      ],
      hcl: `
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}
hook "plan-ready" {
  provider = "guard"
  mode     = "veto"
}`,
      scripts: {
        veto: { turns: [calls(tool("w", "tools__write", { path: "a", content: "x" })), reply("ok")] },
      },
    });
    const c = k.client();
    const id = await c.create("[veto] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    const item = k.file(id).planItems[0]!;
    expect([item.decisionText, item.decidedBy]).toEqual(["deny", "guard"]);
    expect(k.file(id).plans()[0]!.items[0]!.reason).toBe("guard says no");
    expect(c.of("permissionRequest")).toEqual([]);
    await k.close();
  });

  it("lets a veto subscriber at pre-tool-call stop single calls of any kind", async () => {
    const k = await h.kernel({
      providers: [
        {
          name: "stopper",
          fixture: "hooks",
          attrs: { behavior: JSON.stringify('{"pre-tool-call":"deny"}') },
        },
      ],
      hcl: `
hook "pre-tool-call" {
  provider = "stopper"
  mode     = "veto"
}`,
      scripts: {
        pretool: {
          turns: [
            calls(
              tool("d", "tools__read", { path: "a" }),
              tool("w", "tools__write", { path: "a", content: "x" }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[pretool] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    const f = k.file(id);
    expect(f.toolResults().map((r) => [r.toolName, r.denied])).toEqual([
      ["read", true],
      ["write", true],
    ]);
    expect(f.planItems.map((p) => [p.decisionText, p.decidedBy])).toEqual([["deny", "stopper"]]);
    await k.close();
  });

  it("prechecks data sources: deny blocks the read, an ask is downgraded to deny and logged", async () => {
    const k = await h.kernel({
      hcl: `
policy "no_reads" {
  match  = { provider = "tools", tool_name = "read" }
  action = "deny"
}
policy "ask_flaky" {
  match  = { provider = "tools", tool_name = "flaky" }
  action = "ask"
}`,
      scripts: {
        precheck: {
          turns: [
            calls(tool("a", "tools__read", { path: "x" }), tool("b", "tools__flaky", { key: "p" })),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[precheck] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    const results = k.file(id).toolResults();
    expect(results.map((r) => r.denied)).toEqual([true, true]);
    expect(results[1]!.outcome.case === "error" && results[1]!.outcome.value.message).toContain(
      "cannot, so it is denied",
    );
    expect(k.logs.some((l) => l.level === "warn" && l.message.includes('"ask_flaky" resolved to ask'))).toBe(
      true,
    );
    expect(c.of("permissionRequest")).toEqual([]);
    await k.close();
  });
});

describe("arguments", () => {
  it("answers malformed or schema-violating arguments with invalid_arguments before the gate", async () => {
    const k = await h.kernel({
      scripts: {
        badargs: {
          turns: [
            calls(
              tool("a", "tools__write", { path: "x" }),
              { toolRaw: { id: "b", name: "tools__read", args: "{not json" } },
              tool("c", "tools__read", { path: "fine" }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[badargs] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k).map((e) => k.vendorId(id, e["callId"]))).toEqual(["c"]);
    expect(k.file(id).planItems).toEqual([]);
    expect(c.of("permissionRequest")).toEqual([]);
    const results = k.file(id).toolResults();
    expect(results.map((r) => r.outcome.case === "error" && r.outcome.value.category)).toEqual([
      ToolErrorCategory.INVALID_ARGUMENTS,
      ToolErrorCategory.INVALID_ARGUMENTS,
      false,
    ]);
    await k.close();
  });
});

describe("asking a human", () => {
  it("executes nothing for a denied ask and records the human's decision", async () => {
    const k = await h.kernel({
      scripts: { askdeny: { turns: [calls(tool("r", "tools__remove", { path: "a" })), reply("ok")] } },
    });
    const c = k.client();
    const id = await c.create("[askdeny] go");
    const req = await c.next("permissionRequest");
    expect(req.planItem?.decision).toBe(PlanDecision.ASK);
    decide(c, id, req.planItem!.id, ClientDecision.DENY);
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    const apply = k.file(id).applies()[0]!.items[0]!;
    expect([apply.outcome, apply.decision, apply.decidedBy]).toEqual([
      ApplyOutcome.DENIED,
      PlanDecision.DENY,
      "human:once",
    ]);
    await k.close();
  });

  it("a denial with the operator's reason gives the model that reason in the tool result", async () => {
    const k = await h.kernel({
      scripts: { askwhy: { turns: [calls(tool("r", "tools__remove", { path: "a" })), reply("ok")] } },
    });
    const c = k.client();
    const id = await c.create("[askwhy] go");
    const req = await c.next("permissionRequest");
    decide(c, id, req.planItem!.id, ClientDecision.DENY, { reason: "keep that file, remove b instead" });
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const [result] = k.file(id).toolResults();
    expect(result?.outcome.case).toBe("error");
    expect(result?.outcome.case === "error" && result.outcome.value.message).toContain(
      "denied by the operator, who said: keep that file, remove b instead",
    );
    await k.close();
  });

  it("re-validates corrected input: an invalid correction is an error and the item stays pending", async () => {
    const k = await h.kernel({
      scripts: {
        edited: {
          turns: [calls(tool("w", "tools__write", { path: "draft.txt", content: "x" })), reply("ok")],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[edited] go");
    const req = await c.next("permissionRequest");
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, { correctedInput: { path: 42 } });
    const err = await c.next("error");
    expect(err.error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
    expect(err.error?.message).toContain("input schema");
    expect(started(k)).toEqual([]);
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, {
      correctedInput: { path: "final.txt", content: "y" },
    });
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k).map((e) => e["args"])).toEqual([{ path: "final.txt", content: "y" }]);
    const apply = k.file(id).applies()[0]!.items[0]!;
    expect(apply.appliedInput).toEqual({ path: "final.txt", content: "y" });
    await k.close();
  });

  it("SESSION scope auto-approves the next call to the same path, and asks again for another", async () => {
    const k = await h.kernel({
      scripts: {
        sess: {
          turns: [
            calls(tool("w1", "tools__write", { path: "a", content: "1" })),
            calls(tool("w2", "tools__write", { path: "./a", content: "2" })),
            calls(tool("w3", "tools__write", { path: "b", content: "3" })),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[sess] go");
    const req = await c.next("permissionRequest");
    // The prompt says what the remembered answer will cover before the human answers.
    expect(req.planItem!.rememberScope).toBe("tools.write on exactly a");
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, { scope: PlanDecisionScope.SESSION });
    const again = await c.next("permissionRequest", (v) => v.planItem!.id !== req.planItem!.id);
    expect(again.planItem!.input).toMatchObject({ path: "b" });
    decide(c, id, again.planItem!.id, ClientDecision.ALLOW);
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(c.of("permissionRequest")).toHaveLength(2);
    expect(started(k, "write")).toHaveLength(3);
    expect(k.file(id).planItems.map((p) => [p.decisionText, p.decidedBy])).toEqual([
      ["ask", "policy:default"],
      ["allow", "session:tools.write[a]"],
      ["ask", "policy:default"],
    ]);
    expect(existsSync(join(k.projectDir, ".agent", "policy.auto.hcl"))).toBe(false);
    await k.close();
  });

  it("ALWAYS scope writes a durable rule that a later kernel applies", async () => {
    const k = await h.kernel({
      scripts: {
        always: { turns: [calls(tool("w1", "tools__write", { path: "a", content: "1" })), reply("ok")] },
      },
    });
    const c = k.client();
    const id = await c.create("[always] go");
    const req = await c.next("permissionRequest");
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, { scope: PlanDecisionScope.ALWAYS });
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const store = readFileSync(join(k.projectDir, ".agent", "policy.auto.hcl"), "utf8");
    expect(store).toContain('policy "always:default:tools.write[a]"');
    expect(store).toMatch(/"tool_name"\s*=\s*"write"/);
    expect(store).toMatch(/"path"\s*=\s*\["a"\]/);
    expect(store).toMatch(/action\s*=\s*"allow"/);
    expect(store).toMatch(/profile\s*=\s*"default"/);
    await k.close();

    // A new kernel on the same project applies the rule to the same path, and asks for another.
    const k2 = await h.kernel({ reuse: k });
    k2.script("always2", {
      turns: [
        calls(tool("w2", "tools__write", { path: "a", content: "2" })),
        calls(tool("w3", "tools__write", { path: "b", content: "3" })),
        reply("ok"),
      ],
    });
    const c2 = k2.client();
    const id2 = await c2.create("[always2] go");
    const req2 = await c2.next("permissionRequest");
    expect(req2.planItem!.input).toMatchObject({ path: "b" });
    decide(c2, id2, req2.planItem!.id, ClientDecision.DENY);
    expect(await c2.finished(id2)).toBe(SessionStatus.COMPLETED);
    expect(k2.file(id2).planItems.map((p) => [p.decisionText, p.decidedBy])).toEqual([
      ["allow", "always:default:tools.write[a]"],
      ["ask", "policy:default"],
    ]);
    await k2.close();
  });

  it("never remembers a call carrying a secret: the prompt says so, SESSION/ALWAYS are refused, ONCE works", async () => {
    const secret = "sk-ant-api03-canaryCANARYcanary0042";
    const k = await h.kernel({
      scripts: {
        secret: { turns: [calls(tool("w", "tools__write", { path: "a", content: secret })), reply("ok")] },
      },
    });
    const c = k.client();
    const id = await c.create("[secret] go");
    const req = await c.next("permissionRequest");
    expect(req.planItem!.rememberScope).toBeUndefined();
    expect(req.planItem!.rememberUnavailable).toMatch(/secret/);
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, { scope: PlanDecisionScope.ALWAYS });
    const err = await c.next("error");
    expect(err.error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
    expect(err.error?.message).not.toContain(secret);
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW);
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(existsSync(join(k.projectDir, ".agent", "policy.auto.hcl"))).toBe(false);
    await k.close();
  });

  it("rejects an ALWAYS decision it cannot store with a distinct error; the item stays pending", async () => {
    const k = await h.kernel({
      scripts: {
        nostore: { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("ok")] },
      },
    });
    writeFileSync(join(k.projectDir, ".agent"), "not a directory");
    const c = k.client();
    const id = await c.create("[nostore] go");
    const req = await c.next("permissionRequest");
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW, { scope: PlanDecisionScope.ALWAYS });
    const err = await c.next("error");
    expect(err.error?.category).toBe(FrontendErrorCategory.POLICY_STORE_UNAVAILABLE);
    expect(started(k)).toEqual([]);
    decide(c, id, req.planItem!.id, ClientDecision.ALLOW);
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k, "write")).toHaveLength(1);
    await k.close();
  });

  it("first answer wins: a second answer for the same item is rejected to its sender", async () => {
    const k = await h.kernel({
      scripts: {
        race: { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("ok")] },
      },
    });
    const a = k.client();
    const id = await a.create("[race] go");
    const b = k.client();
    b.send({ event: { case: "attachSession", value: { requestId: "att", sessionId: id } } });
    const req = await a.next("permissionRequest");
    await b.next("permissionRequest");
    decide(a, id, req.planItem!.id, ClientDecision.ALLOW);
    await a.finished(id);
    decide(b, id, req.planItem!.id, ClientDecision.DENY);
    const err = await b.next("error");
    expect(err.error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
    expect(err.error?.message).toContain("already decided");
    expect(a.of("error")).toEqual([]);
    expect(started(k, "write")).toHaveLength(1);
    await k.close();
  });
});

describe("headless", () => {
  it("denies an ask when no human is attached, unless the operator allows it", async () => {
    const script = { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("ok")] };
    const k = await h.kernel({ scripts: { headless: script } });
    const s = await k.kernel.startSession({ prompt: "[headless] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    expect(k.file(s.id).applies()[0]!.items[0]!.decidedBy).toBe("headless:deny");
    await k.close();

    const k2 = await h.kernel({ scripts: { headless: script }, headlessAsk: "allow" });
    const s2 = await k2.kernel.startSession({ prompt: "[headless] go" });
    expect(await s2.idle()).toBe(SessionStatus.COMPLETED);
    expect(started(k2, "write")).toHaveLength(1);
    expect(k2.file(s2.id).applies()[0]!.items[0]!.decidedBy).toBe("headless:allow");
    await k2.close();
  });

  it("settles a pending ask by the headless rule when the last interactive frontend detaches", async () => {
    const k = await h.kernel({
      scripts: {
        detach: { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("ok")] },
      },
    });
    const watcher = k.client({ interactive: false });
    const c = k.client();
    const id = await c.create("[detach] go");
    watcher.send({ event: { case: "attachSession", value: { requestId: "w", sessionId: id } } });
    await c.next("permissionRequest");
    c.close();
    expect(await watcher.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(started(k)).toEqual([]);
    await k.close();
  });

  it("does not run an interactive call with nobody to answer it, and tells the model to go on (no denial)", async () => {
    const k = await h.kernel({
      scripts: { noanswer: { turns: [calls(tool("q", "tools__ask", { question: "?" })), reply("ok")] } },
    });
    const s = await k.kernel.startSession({ prompt: "[noanswer] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const r = k.file(s.id).toolResults()[0]!;
    expect(r.denied).toBe(false);
    expect(r.outcome.case === "error" && r.outcome.value.message).toContain("no human");
    expect(r.outcome.case === "error" && r.outcome.value.message).toContain("No answer will come");
    await k.close();
  });
});

describe("interactive calls", () => {
  it("rejects an answer that does not match the output schema and keeps waiting", async () => {
    const k = await h.kernel({
      scripts: { answer: { turns: [calls(tool("q", "tools__ask", { question: "color?" })), reply("ok")] } },
    });
    const c = k.client();
    const id = await c.create("[answer] go");
    const q = await c.next("interactiveRequest");
    expect(q.provider).toBe("tools");
    expect(q.prompt?.root?.node.case === "text" && q.prompt.root.node.value.content).toBe("Q: color?");
    c.send({
      sessionId: id,
      event: { case: "interactiveResponse", value: { callId: q.callId, response: { colour: 1 } } },
    });
    const err = await c.next("error");
    expect(err.error?.category).toBe(FrontendErrorCategory.INVALID_CLIENT_EVENT);
    c.send({
      sessionId: id,
      event: { case: "interactiveResponse", value: { callId: q.callId, response: { answer: "red" } } },
    });
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const r = k.file(id).toolResults()[0]!;
    expect(r.outcome.case === "result" && r.outcome.value.payload).toEqual({ answer: "red" });
    await k.close();
  });
});

describe("plans", () => {
  it("withholds resource tools in plan mode; nothing is intercepted at run time", async () => {
    const k = await h.kernel({ scripts: { planmode: { turns: [reply("a plan")] } } });
    const s = await k.kernel.startSession({ prompt: "[planmode] plan it", planMode: true });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const names = k.requests("planmode")[0]!.request.tools.map((t: { name: string }) => t.name);
    expect(names).toContain("tools__read");
    expect(names).toContain("tools__ask");
    expect(
      names.filter((n: string) =>
        ["tools__write", "tools__remove", "tools__finish", "tools__slow"].includes(n),
      ),
    ).toEqual([]);
    await k.close();
  });

  it("lists the session's tools under the names the model is sent, with kind, risk and what plan mode offers", async () => {
    const k = await h.kernel({ scripts: { listing: { turns: [reply("one"), reply("two")] } } });
    const s = await k.kernel.startSession({ planMode: true });
    const listed = s.tools();
    expect(listed.find((t) => t.tool === "write")).toEqual({
      name: "tools__write",
      provider: "tools",
      tool: "write",
      kind: "resource",
      risk: "moderate",
      offered: false,
    });
    expect(listed.find((t) => t.tool === "ask")).toMatchObject({
      kind: "interactive",
      risk: "read_only",
      offered: true,
    });
    s.send("[listing] plan");
    await s.idle();
    const sent = (turn: number) =>
      k.requests("listing")[turn]!.request.tools.map((t: { name: string }) => t.name);
    expect(listed.filter((t) => t.offered).map((t) => t.name)).toEqual(sent(0));
    s.setPlanMode(false);
    const all = s.tools();
    expect(all.every((t) => t.offered)).toBe(true);
    s.send("go on");
    await s.idle();
    expect(all.map((t) => t.name)).toEqual(sent(1));
    await k.close();
  });

  it("snapshots kind, risk and description, and a Preview; a slow Preview just leaves it out", async () => {
    const k = await h.kernel({
      limits: { previewTimeoutMs: 1000 },
      scripts: {
        preview: {
          turns: [
            calls(
              tool("w", "tools__write", { path: "a", content: "new text" }),
              tool("s", "tools__slowpreview", { path: "b" }),
            ),
            reply("ok"),
          ],
        },
      },
      headlessAsk: "allow",
    });
    const s = await k.kernel.startSession({ prompt: "[preview] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const [write, slow] = k.file(s.id).plans()[0]!.items;
    expect(write!.preview?.root?.node.case).toBe("diff");
    expect([write!.kind, write!.risk, write!.description]).toEqual([1, 3, "Writes a file."]);
    expect(slow!.preview).toBeUndefined();
    // Without a preview the item still carries the raw arguments for the frontend to show.
    expect(slow!.input).toEqual({ path: "b" });
    expect(
      started(k)
        .map((e) => e["tool"])
        .sort(),
    ).toEqual(["slowpreview", "write"]);
    await k.close();
  });

  it("ends the loop after a terminates_turn call's post-tool-call hook, whether it succeeded, was denied or failed", async () => {
    const k = await h.kernel({
      hcl: `
policy "finish_ok" {
  match  = { provider = "tools", tool_name = "finish" }
  action = "allow"
}`,
      scripts: {
        terminate: {
          turns: [
            calls(tool("r", "tools__read", { path: "a" }), tool("f", "tools__finish", { summary: "done" })),
            reply("never"),
          ],
        },
        // invalid arguments: the call fails with invalid_arguments, and still ends the turn
        terminate3: { turns: [calls(tool("f", "tools__finish", {})), reply("continued")] },
      },
    });
    const s = await k.kernel.startSession({ prompt: "[terminate] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(k.requests("terminate")).toHaveLength(1);
    const s3 = await k.kernel.startSession({ prompt: "[terminate3] go" });
    expect(await s3.idle()).toBe(SessionStatus.COMPLETED);
    expect(k.requests("terminate3")).toHaveLength(1);
    const failed = k.file(s3.id).toolResults();
    expect(failed.map((r) => [r.toolName, r.outcome.case, r.denied])).toEqual([["finish", "error", false]]);
    await k.close();

    // no policy allows it: headless, the ask is denied, and the turn still ends there
    const k2 = await h.kernel({
      scripts: {
        terminate2: { turns: [calls(tool("f", "tools__finish", { summary: "done" })), reply("continued")] },
      },
    });
    const s2 = await k2.kernel.startSession({ prompt: "[terminate2] go" });
    expect(await s2.idle()).toBe(SessionStatus.COMPLETED);
    expect(k2.requests("terminate2")).toHaveLength(1);
    expect(
      k2
        .file(s2.id)
        .toolResults()
        .map((r) => r.denied),
    ).toEqual([true]);
    await k2.close();
  });

  it("schedules per ConcurrencySpec: distinct keys overlap, a shared key and serial models do not", async () => {
    const k = await h.kernel({
      headlessAsk: "allow",
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*"]
}
agent_profile "serial" {
  model {
    primary {
      provider = "model"
      id       = "serial"
    }
  }
  tools = ["tools.*"]
}`,
      scripts: {
        sched: {
          turns: [
            calls(
              tool("r1", "tools__read", { path: "a", hold: true }),
              tool("r2", "tools__read", { path: "b", hold: true }),
              tool("w1", "tools__write", { path: "same", content: "1", hold: true }),
              tool("w2", "tools__write", { path: "same", content: "2", hold: true }),
              tool("w3", "tools__write", { path: "other", content: "3", hold: true }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    // Each call holds (running, after logging its start) until the test releases it, so
    // "these two overlap" is seen directly: both started and neither can have ended.
    const log = (sessionId: string) => k.invocations().filter((e) => e["sessionId"] === sessionId);
    const started = (sessionId: string) =>
      log(sessionId)
        .filter((e) => e["phase"] === "start")
        .map((e) => k.vendorId(sessionId, e["callId"] as string));
    const running = (sessionId: string) => {
      const ended = new Set(
        log(sessionId)
          .filter((e) => e["phase"] === "end")
          .map((e) => k.vendorId(sessionId, e["callId"] as string)),
      );
      return started(sessionId).filter((id) => !ended.has(id));
    };
    const release = (sessionId: string, ...ids: string[]) => {
      for (const id of ids)
        writeFileSync(join(k.logDir, `release-${sessionId}-${k.callId(sessionId, id)}`), "");
    };
    /** Waits for the invocation log to satisfy `ok` (woken by writes to the log directory). */
    const until = (what: string, ok: () => boolean) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!ok()) return;
          watcher.close();
          clearTimeout(deadline);
          resolve();
        };
        const watcher = watch(k.logDir, check);
        // Reached only when the kernel never does what is awaited (the test then fails).
        const deadline = setTimeout(() => {
          watcher.close();
          reject(new Error(`${what} never happened; log: ${JSON.stringify(k.invocations())}`));
        }, 15_000);
        check();
      });

    const s = await k.kernel.startSession({ prompt: "[sched] go" });
    // Data sources with safe: true run together.
    await until("r1 and r2 running at once", () => running(s.id).length === 2);
    expect(running(s.id)).toEqual(["r1", "r2"]);
    release(s.id, "r1", "r2");
    // Writes keyed on path: distinct keys run together, the shared key waits. w2 was
    // dispatched before w3, so a kernel that did not hold it back would have started it
    // by the time w3 started.
    await until("w1 and w3 running at once", () => ["w1", "w3"].every((id) => running(s.id).includes(id)));
    expect(running(s.id)).toEqual(["w1", "w3"]);
    release(s.id, "w1");
    await until("w2 starting once w1 ended", () => started(s.id).includes("w2"));
    const order = log(s.id).map((e) => `${e["phase"]} ${k.vendorId(s.id, e["callId"])}`);
    expect(order.indexOf("end w1")).toBeLessThan(order.indexOf("start w2"));
    release(s.id, "w2", "w3");
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);

    // A model without parallel tool calls: one call at a time, in tool_use order.
    const s2 = await k.kernel.startSession({ prompt: "[sched] go", profile: "serial" });
    for (const id of ["r1", "r2", "w1", "w2", "w3"]) {
      await until(`${id} starting`, () => started(s2.id).includes(id));
      expect(running(s2.id)).toEqual([id]);
      release(s2.id, id);
      await until(`${id} ending`, () => !running(s2.id).includes(id));
    }
    expect(await s2.idle()).toBe(SessionStatus.COMPLETED);
    await k.close();
  });
});

describe("arguments", () => {
  it("checks each call's arguments once, at step 7, and never runs a call whose arguments fail", async () => {
    const k = await h.kernel({
      headlessAsk: "allow",
      scripts: {
        argsonce: {
          turns: [
            calls(
              tool("a", "tools__read", { path: "a" }),
              tool("w", "tools__write", { path: "b", content: "x" }),
              tool("bad", "tools__read", {}),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const s = await k.kernel.startSession({ prompt: "[argsonce] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const checked = k.traces
      .filter((t) => t.name === "tool.arguments_checked")
      .map((t) => k.vendorId(s.id, t.attrs?.["callId"] as string));
    expect(checked).toEqual(["a", "w", "bad"]);
    expect(started(k).map((e) => k.vendorId(s.id, e["callId"]))).toEqual(["a", "w"]);
    const bad = k
      .file(s.id)
      .toolResults()
      .find((r) => r.toolCallId === k.callId(s.id, "bad"))!;
    expect(bad.outcome.case === "error" && bad.outcome.value.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
    await k.close();
  });
});
