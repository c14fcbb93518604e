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
});
