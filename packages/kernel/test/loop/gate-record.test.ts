// What the gate writes down for each call of a turn: the tool_result events (provider, tool
// name, output, denial, attempts), the plan shown to frontends before apply, and the apply
// results (outcome, decision, and the error of a call that did not apply).
import { ApplyOutcome, PlanDecision } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

describe("the gate's record of a turn", () => {
  it("writes each call's result, shows the plan before apply, and says what became of each item", async () => {
    const k = await h.kernel({
      hcl: `
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}
policy "no_remove" {
  match  = { provider = "tools", tool_name = "remove" }
  action = "deny"
}`,
      scripts: {
        record: {
          turns: [
            calls(
              tool("c", "tools__chunks", { n: 2 }),
              tool("w", "tools__write", { path: "a.txt", content: "hello" }),
              tool("r", "tools__remove", { path: "b.txt" }),
            ),
            reply("done"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[record] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const f = k.file(id);

    const results = f.toolResults();
    expect(results.map((r) => [r.provider, r.toolName, r.denied, r.attempts])).toEqual([
      ["tools", "chunks", false, 0],
      ["tools", "write", false, 0],
      ["tools", "remove", true, 0],
    ]);
    const chunks = results[0]!;
    expect(chunks.toolCallId).toBe(f.callId("c"));
    expect(chunks.output.map((o) => new TextDecoder().decode(o.data)).join("")).toBe("line 1\nline 2\n");
    expect(chunks.outcome.case).toBe("result");
    const removed = results[2]!;
    expect(removed.outcome.case === "error" && removed.outcome.value.category).toBe(
      ToolErrorCategory.PERMISSION_DENIED,
    );
    expect(removed.output).toEqual([]);

    // The plan reached the frontend before anything applied, with both resource items.
    const ready = c.of("planReady", id);
    expect(ready).toHaveLength(1);
    expect(ready[0]!.event.value.plan!.items.map((i) => [i.toolName, i.decision])).toEqual([
      ["write", PlanDecision.ALLOW],
      ["remove", PlanDecision.DENY],
    ]);
    expect(f.plans()).toHaveLength(1);
    // Preview is asked only of a tool that offers it: write does, remove does not.
    expect(f.plans()[0]!.items.map((i) => i.preview?.root?.node.case)).toEqual(["diff", undefined]);

    const [apply] = f.applies();
    expect(f.applies()).toHaveLength(1);
    expect(apply!.items.map((i) => [i.outcome, i.decision, i.decidedBy, i.toolCallId])).toEqual([
      [ApplyOutcome.APPLIED, PlanDecision.ALLOW, "writes_ok", f.callId("w")],
      [ApplyOutcome.DENIED, PlanDecision.DENY, "no_remove", f.callId("r")],
    ]);
    expect(apply!.items[0]!.error).toBeUndefined();
    expect(apply!.items[1]!.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
    expect(apply!.items[1]!.error?.message).toContain('denied by policy rule "no_remove"');

    // What the model read for each, in the order of its calls.
    const sent = k.requests("record")[1]!.request.messages.at(-1).content;
    // (JSON of the request: false is left out.)
    expect(sent.map((b: { toolResult: { isError?: boolean } }) => b.toolResult.isError === true)).toEqual([
      false,
      false,
      true,
    ]);
    await k.close();
  });

  it("asks policy with the call's risk: a rule on risk class decides every tool of that class", async () => {
    const k = await h.kernel({
      hcl: `
policy "high_is_out" {
  match  = { risk = "high" }
  action = "deny"
}
policy "moderate_ok" {
  match  = { risk = "moderate" }
  action = "allow"
}`,
      scripts: {
        risky: {
          turns: [
            calls(
              tool("w", "tools__write", { path: "a.txt", content: "x" }),
              tool("r", "tools__remove", { path: "a.txt" }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[risky] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(k.file(id).planItems.map((p) => [p.toolName, p.decisionText, p.decidedBy])).toEqual([
      ["write", "allow", "moderate_ok"],
      ["remove", "deny", "high_is_out"],
    ]);
    expect(k.file(id).plans()[0]!.items[1]!.reason).toBe(
      'denied by policy rule "high_is_out"; to allow it, change that rule\'s action to "ask" or "allow" in agent.hcl, or remove the rule',
    );
    await k.close();
  });

  it("denies a data source or an interactive call a policy would ask about, and says why", async () => {
    const k = await h.kernel({
      hcl: `
policy "ask_reads" {
  match  = { provider = "tools", tool_name = "read" }
  action = "ask"
}
policy "ask_questions" {
  match  = { provider = "tools", tool_name = "ask" }
  action = "ask"
}`,
      scripts: {
        noask: {
          turns: [
            calls(tool("r", "tools__read", { path: "a.txt" })),
            calls(tool("q", "tools__ask", { question: "ok?" })),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[noask] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(c.of("permissionRequest")).toEqual([]);
    expect(c.of("interactiveRequest")).toEqual([]);
    const messages = k
      .file(id)
      .toolResults()
      .map((r) => [r.toolName, r.denied, r.outcome.case === "error" ? r.outcome.value.message : ""]);
    expect(messages).toEqual([
      [
        "read",
        true,
        'policy rule "ask_reads" asks, which a data-source call cannot, so it is denied (decided by ask_reads)',
      ],
      [
        "ask",
        true,
        'policy rule "ask_questions" asks, which an interactive call cannot, so it is denied (decided by ask_questions)',
      ],
    ]);
    const warned = k.logs.filter((l) => l.level === "warn" && l.message.includes("no apply step exists"));
    expect(warned.map((l) => [l.message.split(";")[0], l.fields?.["tool"]])).toEqual([
      ['policy rule "ask_reads" resolved to ask for a data_source call', "tools.read"],
      ['policy rule "ask_questions" resolved to ask for an interactive call', "tools.ask"],
    ]);
    await k.close();
  });

  it("refuses a write to the agent's own files before policy, and never previews or runs it", async () => {
    const k = await h.kernel({
      hcl: `
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}`,
      scripts: {
        own: {
          turns: [
            calls(
              tool("w", "tools__write", { path: "agent.hcl", content: "settings {}" }),
              tool("x", "tools__write", { path: "notes.txt", content: "fine" }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[own] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const f = k.file(id);
    const [own, other] = f.plans()[0]!.items;
    expect([own!.decision, own!.decidedBy]).toEqual([PlanDecision.DENY, "kernel:protected_paths"]);
    expect(own!.reason).toMatch(/agent\.hcl belongs to the agent itself .*no tool call may change it/);
    expect(own!.preview).toBeUndefined();
    expect([other!.decision, other!.decidedBy]).toEqual([PlanDecision.ALLOW, "writes_ok"]);
    expect(
      k
        .invocations()
        .filter((e) => e["phase"] === "start")
        .map((e) => e["args"]["path"]),
    ).toEqual(["notes.txt"]);
    await k.close();
  });

  it("a pre-tool-call veto of a data source is its result, naming the subscriber and its reason", async () => {
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
      scripts: { vetoread: { turns: [calls(tool("r", "tools__read", { path: "a.txt" })), reply("ok")] } },
    });
    const c = k.client();
    const id = await c.create("[vetoread] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const [r] = k.file(id).toolResults();
    expect(r!.denied).toBe(true);
    expect(r!.outcome.case === "error" && r!.outcome.value.message).toBe(
      "stopper says no (decided by stopper)",
    );
    await k.close();
  });
});
