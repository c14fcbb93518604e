// Sub-agents over real plugin processes (issue 20): the first-party agent provider's
// spawn_subagent calls RunSession on the kernel callback channel; the scripted model and
// the tools fixture run as go-plugin subprocesses. Children's prompts name their model
// scenario ("[c1] ..."), so each child follows its own script.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { listSessions } from "@pluggableharness/state";
import { afterAll, describe, expect, it } from "vitest";
import {
  calls,
  type Ev,
  Harness,
  type KernelSpec,
  type Loose,
  type Provider,
  reply,
  stop,
  type TestKernel,
  text,
  tool,
  usage,
} from "./harness.ts";

const AGENT = fileURLToPath(new URL("../../../../providers/agent", import.meta.url));

const h = new Harness();
afterAll(() => h.dispose());

async function until(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const model = (name = "model") => `
  model {
    primary {
      provider = "${name}"
      id       = "alpha"
    }
  }`;

const spawn = (id: string, profile: string, prompt: string): Ev =>
  tool(id, "agent__spawn_subagent", { profile, prompt });

function kernelWith(hcl: string, extra: Partial<KernelSpec> = {}, providers: Provider[] = []) {
  return h.kernel({
    transport: "process",
    providers: [
      {
        name: "agent",
        fixture: "installed",
        firstParty: "agent",
        attrs: { profiles: '{ worker = "does one task", writer = "changes files", mute = "only talks" }' },
      },
      ...providers,
    ],
    install: { agent: AGENT },
    hcl: `
policy "spawn_ok" {
  match  = { provider = "agent" }
  action = "allow"
}
${hcl}`,
    ...extra,
  });
}

const starts = (k: TestKernel, toolName: string) =>
  k.invocations().filter((e: Loose) => e.phase === "start" && e.tool === toolName);
const release = (k: TestKernel, e: Loose) =>
  writeFileSync(join(k.logDir, `release-${e.sessionId}-${e.callId}`), "");
const children = (k: TestKernel, parent: string) =>
  listSessions({ dir: k.stateDir, parentSessionId: parent }).sessions;

describe("spawn_subagent through RunSession", () => {
  it("runs parallel children up to max_concurrent_subagents, serialized on a shared safe:false tool", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
  max_concurrent_subagents = 2
}
agent_profile "worker" {${model()}
  tools = ["tools.locked"]
}`);
    const child = (n: string) => ({
      turns: [calls(tool(`${n}-1`, "tools__locked", { label: n, hold: true })), reply(`${n} finished`)],
    });
    k.script("p", {
      turns: [
        calls(
          spawn("s1", "worker", "[c1] one"),
          spawn("s2", "worker", "[c2] two"),
          spawn("s3", "worker", "[c3] three"),
        ),
        reply("all three done"),
      ],
    });
    for (const n of ["c1", "c2", "c3"]) k.script(n, child(n));
    const c = k.client();
    const p = await c.create("[p] fan out");

    // Two children run (the cap), one of them holds the provider, the other waits for it.
    await until("one child holds the locked tool and another waits", () => {
      return starts(k, "locked").length >= 1 && k.traces.some((t) => t.name === "tool.lock_wait");
    });
    expect(starts(k, "locked")).toHaveLength(1);
    expect(children(k, p)).toHaveLength(2);
    // Release the holders one by one; never two at once.
    for (let i = 1; i <= 3; i++) {
      await until(`call ${i} started`, () => starts(k, "locked").length === i);
      const running = starts(k, "locked");
      const ended = k.invocations().filter((e: Loose) => e.phase === "end" && e.tool === "locked");
      expect(running.length - ended.length).toBe(1);
      release(k, running[i - 1]);
    }
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);

    const kids = children(k, p);
    expect(kids).toHaveLength(3);
    for (const kid of kids) {
      expect(kid.parentSessionId).toBe(p);
      expect(kid.depth).toBe(1);
      expect(kid.profile).toBe("worker");
      expect(kid.status).toBe(SessionStatus.COMPLETED);
    }
    // Only each child's final message crossed back, one per spawn call.
    const results = k.file(p).toolResults();
    expect(results.map((r) => r.outcome.case)).toEqual(["result", "result", "result"]);
    const answers = results.map((r) => String((r.outcome.value as Loose).payload.answer));
    expect(answers.sort()).toEqual(["c1 finished", "c2 finished", "c3 finished"]);
    // The parent's frontend saw the tree: each child started and ended.
    const tree = c.of("sessionTreeUpdate", p).map((e) => e.event.value);
    for (const kid of kids) {
      expect(tree.some((u) => u.childSessionId === kid.sessionId && u.status === SessionStatus.RUNNING)).toBe(
        true,
      );
      expect(
        tree.some((u) => u.childSessionId === kid.sessionId && u.status === SessionStatus.COMPLETED),
      ).toBe(true);
    }
    // A read-only child's spawn keeps the tool's declared risk.
    expect(
      k
        .file(p)
        .plans()[0]!
        .items.map((i) => i.risk),
    ).toEqual([RiskClass.MODERATE, RiskClass.MODERATE, RiskClass.MODERATE]);
    await k.close();
  });

  it("removes spawn tools at depth 0; an ancestor's tighter budget wins", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
  max_depth = 1
}
agent_profile "worker" {${model()}
  tools = ["agent.*", "tools.read"]
  max_depth = 5
}
agent_profile "flat" {${model()}
  tools = ["agent.*", "tools.read"]
  max_depth = 0
}`);
    k.script("p", { turns: [calls(spawn("s1", "worker", "[c1] look")), reply("ok")] });
    k.script("c1", { turns: [reply("nothing to spawn")] });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const toolsOf = (scenario: string) =>
      (k.requests(scenario)[0]!.request.tools ?? []).map((t: Loose) => t.name);
    expect(toolsOf("p")).toContain("agent__spawn_subagent");
    // The child (remaining depth min(1-1, 5) = 0) cannot see a spawn tool at all.
    expect(toolsOf("c1")).toEqual(["tools__read"]);
    // A root profile with max_depth = 0 has none either.
    const flat = await k.kernel.startSession({ profile: "flat" });
    expect(flat.tools().map((t) => t.name)).toEqual(["tools__read"]);
    await k.close();
  });

  it("a child's spend counts against the parent's max_cost_usd and stops the parent", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
  max_cost_usd = 0.5
}
agent_profile "worker" {${model()}
  tools = ["tools.read"]
}`);
    k.script("p", { turns: [calls(spawn("s1", "worker", "[c1] spend")), reply("parent stops")] });
    // A million input tokens: the child alone exceeds the parent's budget.
    k.script("c1", {
      turns: [
        { events: [tool("r1", "tools__read", { path: "a" }), usage(1_000_000, 0), stop("tool_use")] },
        reply("child stops"),
      ],
    });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.ERROR_MAX_BUDGET_USD);
    const [kid] = children(k, p);
    expect(kid!.status).toBe(SessionStatus.ERROR_MAX_BUDGET_USD);
    // The child got its final-answer turn (no tools) and so did the parent.
    expect(k.requests("c1")).toHaveLength(2);
    expect(k.requests("c1")[1]!.request.tools ?? []).toEqual([]);
    expect(k.requests("p")).toHaveLength(2);
    expect(k.requests("p")[1]!.request.tools ?? []).toEqual([]);
    const payload = (k.file(p).toolResults()[0]!.outcome.value as Loose).payload;
    expect(payload.status).toBe("error_max_budget_usd");
    // The roll-up is the child's own ledger (it has no children of its own).
    const ledger = k.file(kid!.sessionId).ledger.reduce((sum, row) => sum + row.costUsd, 0);
    expect(ledger).toBeGreaterThan(0.5);
    expect(payload.cost_usd).toBeCloseTo(ledger, 9);
    await k.close();
  });

  it("interrupting the parent cancels a running child and its tool within a second", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "worker" {${model()}
  tools = ["tools.slow"]
}
policy "slow_ok" {
  match  = { provider = "tools", tool_name = "slow" }
  action = "allow"
}`);
    k.script("p", { turns: [calls(spawn("s1", "worker", "[c1] wait"))] });
    k.script("c1", { turns: [calls(tool("w1", "tools__slow", { ms: 60_000 })), reply("never")] });
    const c = k.client();
    const p = await c.create("[p] go");
    await until("the child's slow call runs", () => starts(k, "slow").length === 1);
    const childId = starts(k, "slow")[0].sessionId as string;
    const t0 = Date.now();
    c.send({ sessionId: p, event: { case: "interrupt", value: {} } });
    await until(
      "the child is cancelled",
      () =>
        c
          .of("sessionTreeUpdate", p)
          .some(
            (e) =>
              e.event.value.childSessionId === childId && e.event.value.status === SessionStatus.CANCELLED,
          ),
      5_000,
    );
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(await c.finished(p)).toBe(SessionStatus.CANCELLED);
    await until("the slow call saw its cancellation", () =>
      k.invocations().some((e: Loose) => e.phase === "cancelled" && e.sessionId === childId),
    );
    const kid = k.file(childId);
    expect(kid.meta.status).toBe(SessionStatus.CANCELLED);
    expect(kid.meta.parentSessionId).toBe(p);
    await k.close();
  });

  it("a child whose plugin crashes is the spawn tool's error, and the parent goes on", async () => {
    const k = await kernelWith(
      `
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "worker" {${model("model2")}
  tools = ["tools.read"]
}`,
      {},
      [{ name: "model2", fixture: "model" }],
    );
    k.script("p", { turns: [calls(spawn("s1", "worker", "[c1] crash")), reply("parent carries on")] });
    k.script("c1", { turns: [{ events: [text("partial"), { crash: true }] }] });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const [kid] = children(k, p);
    expect(kid!.status).toBe(SessionStatus.FAILED);
    const outcome = k.file(p).toolResults()[0]!.outcome;
    expect(outcome.case).toBe("error");
    const err = outcome.value as Loose;
    expect(err.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect(err.message).toMatch(/sub-agent failed/);
    // The parent's model read the error and answered.
    expect(k.requests("p")).toHaveLength(2);
    await k.close();
  });

  it("routes a child's permission request to the root frontend, labelled; a denial reaches the parent model", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "writer" {${model()}
  tools = ["tools.write"]
}`);
    k.script("p", { turns: [calls(spawn("s1", "writer", "[c1] write")), reply("told")] });
    k.script("c1", {
      turns: [calls(tool("w1", "tools__write", { path: "x.txt", content: "hi" })), reply("could not write")],
    });
    const c = k.client({ interactive: true });
    const p = await c.create("[p] go");
    const req = await c.next("permissionRequest", (_v, e) => e.sessionId === p);
    expect(req.origin?.profile).toBe("writer");
    expect(req.origin?.parentSessionId).toBe(p);
    expect(req.origin?.depth).toBe(1);
    const childId = req.origin!.sessionId;
    expect(childId).not.toBe(p);
    c.send({
      sessionId: p,
      event: {
        case: "planDecision",
        value: { planItemId: req.planItem!.id, decision: 2, reason: "not now" },
      },
    });
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    expect(k.file(childId).toolResults()[0]!.outcome.case).toBe("error");
    const payload = (k.file(p).toolResults()[0]!.outcome.value as Loose).payload;
    expect(payload.denials).toHaveLength(1);
    expect(payload.denials[0].tool).toBe("tools.write");
    // What the parent model read next turn names the refusal.
    expect(JSON.stringify(k.requests("p")[1]!.request.messages)).toContain("refused tools.write");
    await k.close();
  });

  it("a headless child's ask resolves by the operator's headless setting", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "writer" {${model()}
  tools = ["tools.write"]
}`);
    k.script("p", { turns: [calls(spawn("s1", "writer", "[c1] write")), reply("told")] });
    k.script("c1", {
      turns: [calls(tool("w1", "tools__write", { path: "x.txt", content: "hi" })), reply("done")],
    });
    const c = k.client({ interactive: false });
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const [kid] = children(k, p);
    const applies = k.file(kid!.sessionId).applies();
    expect(applies[0]!.items[0]!.decidedBy).toBe("headless:deny");
    expect(c.of("permissionRequest")).toHaveLength(0);
    await k.close();
  });

  it("rates a spawn of a profile with unattended write access critical", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "writer" {${model()}
  tools = ["tools.write"]
}
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}`);
    k.script("p", { turns: [calls(spawn("s1", "writer", "[c1] write")), reply("ok")] });
    k.script("c1", { turns: [reply("done")] });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const item = k.file(p).plans()[0]!.items[0]!;
    expect(item.risk).toBe(RiskClass.CRITICAL);
    expect(item.decision).toBe(PlanDecision.ALLOW);
    await k.close();
  });

  it("a spawning plugin that dies mid-child is the parent's tool error; the child is cancelled, not orphaned", async () => {
    const k = await kernelWith(
      `
agent_profile "default" {${model()}
  tools = ["tools.delegate"]
}
agent_profile "worker" {${model()}
  tools = ["tools2.slow"]
}
policy "delegate_ok" {
  match  = { provider = "tools", tool_name = "delegate" }
  action = "allow"
}
policy "slow_ok" {
  match  = { provider = "tools2", tool_name = "slow" }
  action = "allow"
}`,
      {},
      [{ name: "tools2", fixture: "tools-plain" }],
    );
    k.script("p", {
      turns: [
        calls(tool("d1", "tools__delegate", { profile: "worker", prompt: "[c1] wait", crash: true })),
        reply("the delegate crashed; carrying on"),
      ],
    });
    k.script("c1", { turns: [calls(tool("w1", "tools2__slow", { ms: 60_000 })), reply("never")] });
    const c = k.client();
    const p = await c.create("[p] go");
    await until("the child's slow call runs", () => starts(k, "slow").length === 1);
    const childId = starts(k, "slow")[0].sessionId as string;
    const delegate = starts(k, "delegate")[0];
    const t0 = Date.now();
    release(k, delegate);
    await until(
      "the child is cancelled",
      () =>
        c
          .of("sessionTreeUpdate", p)
          .some(
            (e) =>
              e.event.value.childSessionId === childId && e.event.value.status === SessionStatus.CANCELLED,
          ),
      5_000,
    );
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const outcome = k.file(p).toolResults()[0]!.outcome;
    expect(outcome.case).toBe("error");
    expect((outcome.value as Loose).category).toBe(ToolErrorCategory.PROCESS_CRASHED);
    expect(k.file(childId).meta.status).toBe(SessionStatus.CANCELLED);
    await until("the child's tool saw its cancellation", () =>
      k.invocations().some((e: Loose) => e.phase === "cancelled" && e.sessionId === childId),
    );
    await k.close();
  });

  it("a profile with fork_parent_history starts from the parent's conversation (opt-in)", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
}
agent_profile "worker" {${model()}
  tools = ["tools.read"]
  fork_parent_history = true
}`);
    // The forked child's requests begin with the parent's prompt, so they share its
    // scenario (named only here: the model process counts attempts per scenario for the
    // whole file): the second request of turn 0 is the child's.
    k.script("fork", {
      turns: [
        [calls(spawn("s1", "worker", "continue from here")), reply("child answer")],
        reply("parent done"),
      ],
    });
    const c = k.client();
    const p = await c.create("[fork] the original task");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    const childRequest = k.requests("fork").find((r) => r.turn === 0 && r.attempt === 1)!;
    const texts = JSON.stringify(childRequest.request.messages);
    expect(texts).toContain("[fork] the original task");
    expect(texts).toContain("continue from here");
    const [kid] = children(k, p);
    // The forked messages are in the child's own file, marked as such.
    const messages = k.file(kid!.sessionId).messages();
    expect(messages[0]!.syntheticReason).toBe("forked_from_parent");
    const payload = (k.file(p).toolResults()[0]!.outcome.value as Loose).payload;
    expect(payload.answer).toBe("child answer");
    await k.close();
  });

  it("a caller may narrow a child's providers and cost budget, never widen them", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["tools.delegate"]
}
agent_profile "worker" {${model()}
  tools = ["tools.read", "agent.*"]
}
policy "delegate_ok" {
  match  = { provider = "tools", tool_name = "delegate" }
  action = "allow"
}`);
    k.script("p", {
      turns: [
        calls(
          tool("d1", "tools__delegate", { profile: "worker", prompt: "[c1] go", only: "tools", budget: 0.5 }),
        ),
        reply("ok"),
      ],
    });
    k.script("c1", {
      turns: [
        { events: [tool("r1", "tools__read", { path: "a" }), usage(1_000_000, 0), stop("tool_use")] },
        reply("over budget"),
      ],
    });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    // Only the named provider's tools: the profile's spawn tool is gone.
    expect((k.requests("c1")[0]!.request.tools ?? []).map((t: Loose) => t.name)).toEqual(["tools__read"]);
    const [kid] = children(k, p);
    // The caller's budget, tighter than any profile's, stopped the child.
    expect(kid!.status).toBe(SessionStatus.ERROR_MAX_BUDGET_USD);
    await k.close();
  });

  it("grandchildren: depth 2, the tree reaches the root, totals include descendants", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools = ["agent.*"]
  max_depth = 2
}
agent_profile "worker" {${model()}
  tools = ["agent.*", "tools.read"]
}`);
    k.script("p", { turns: [calls(spawn("s1", "worker", "[c1] delegate further")), reply("root done")] });
    k.script("c1", { turns: [calls(spawn("s2", "worker", "[g1] leaf work")), reply("child done")] });
    k.script("g1", { turns: [{ events: [text("leaf done"), usage(1000, 100), stop()] }] });
    const c = k.client();
    const p = await c.create("[p] go");
    expect(await c.finished(p)).toBe(SessionStatus.COMPLETED);
    // The grandchild (remaining depth 0) was offered no spawn tool.
    expect((k.requests("g1")[0]!.request.tools ?? []).map((t: Loose) => t.name)).toEqual(["tools__read"]);
    const [kid] = children(k, p);
    const [grandkid] = children(k, kid!.sessionId);
    expect(grandkid!.depth).toBe(2);
    // The root's frontend heard about the grandchild too.
    const tree = c.of("sessionTreeUpdate", p).map((e) => e.event.value);
    expect(
      tree.some((u) => u.childSessionId === grandkid!.sessionId && u.parentSessionId === kid!.sessionId),
    ).toBe(true);
    const sum = (id: string) => k.file(id).ledger.reduce((a, r) => a + r.costUsd, 0);
    const payload = (k.file(p).toolResults()[0]!.outcome.value as Loose).payload;
    expect(payload.cost_usd).toBeCloseTo(sum(kid!.sessionId) + sum(grandkid!.sessionId), 9);
    expect(payload.input_tokens).toBeGreaterThanOrEqual(1000);
    // On its own a sub-agent is replay-only: its scope came from its parent's call.
    await expect(k.kernel.resumeSession(kid!.sessionId)).rejects.toThrow(
      /is a sub-agent of .*can only be replayed/,
    );
    await k.close();
  });

  it("a profile without tools gives its child none; a child's turns count against the parent's max_turns", async () => {
    const k = await kernelWith(`
agent_profile "default" {${model()}
  tools     = ["agent.*"]
  max_turns = 2
}
agent_profile "mute" {${model()}
}
agent_profile "worker" {${model()}
  tools = ["tools.read"]
}`);
    k.script("p", {
      turns: [
        calls(spawn("s1", "mute", "[m1] talk"), spawn("s2", "worker", "[w1] read")),
        reply("parent final"),
      ],
    });
    k.script("m1", { turns: [reply("only words")] });
    k.script("w1", { turns: [calls(tool("r1", "tools__read", { path: "a" })), reply("worker final")] });
    const c = k.client();
    const p = await c.create("[p] go");
    // The parent's first turn and the worker's first make two: the parent's max_turns is
    // used up, so the worker and then the parent get their final-answer turns. Counted
    // per session, both would have completed.
    expect(await c.finished(p)).toBe(SessionStatus.ERROR_MAX_TURNS);
    expect(k.requests("m1")[0]!.request.tools ?? []).toEqual([]);
    const kids = children(k, p);
    expect(kids.find((x) => x.profile === "mute")!.status).toBe(SessionStatus.COMPLETED);
    expect(kids.find((x) => x.profile === "worker")!.status).toBe(SessionStatus.ERROR_MAX_TURNS);
    expect(k.requests("w1")[1]!.request.tools ?? []).toEqual([]);
    await k.close();
  });
});
