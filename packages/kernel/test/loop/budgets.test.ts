// Oversized tool traffic does not end a session (issue 31, point 8). The defect: a 10 MB
// write_file input stayed in every later request, no model's window held it, and the
// session failed with routing_exhausted; a tool result larger than the window did the same.
// Now later requests carry the input's huge strings cut (the same bytes in every request,
// a resume included) and the result cut to a share of the window, while the tool got the
// whole input and the session file keeps both whole.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, type Loose, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const TEN_MB = 10 * 1024 * 1024;

/** Why a session's turn failed, as the kernel logged it (empty when none did). */
function failure(k: { logs: Array<{ sessionId?: string; message: string }> }, id: string): string {
  return k.logs.find((l) => l.sessionId === id && l.message.startsWith("the turn failed"))?.message ?? "";
}

/** The tool_use inputs and tool_result texts of a recorded request, in order. */
function toolTraffic(request: Loose): { inputs: string[]; results: string[] } {
  const inputs: string[] = [];
  const results: string[] = [];
  for (const m of request.messages ?? []) {
    for (const b of m.content ?? []) {
      if (b.toolUse) inputs.push(JSON.stringify(b.toolUse.input ?? {}));
      if (b.toolResult) for (const c of b.toolResult.content ?? []) if (c.text) results.push(c.text.text);
    }
  }
  return { inputs, results };
}

describe("a huge tool input", () => {
  it("is shortened in later requests, identically after a resume, and the session goes on", async () => {
    const k = await h.kernel({ headlessAsk: "allow" });
    const content = "w".repeat(TEN_MB);
    k.script("huge-input", {
      turns: [
        calls(tool("w1", "tools__write", { path: "big.txt", content })),
        reply("written"),
        reply("still here"),
      ],
    });
    const s = await k.kernel.startSession({ prompt: "[huge-input] write it" });
    expect(await s.idle(), failure(k, s.id)).toBe(SessionStatus.COMPLETED);
    // The tool received every byte.
    const started = k.invocations().find((i) => i["phase"] === "start" && i["tool"] === "write");
    expect(String(started?.["args"]?.["content"] ?? "")).toHaveLength(TEN_MB);
    // The request after the call carries the input cut to its beginning and a note.
    const second = k.requests("huge-input")[1]!;
    const { inputs } = toolTraffic(second.request);
    expect(inputs).toHaveLength(1);
    expect(inputs[0]!.length).toBeLessThan(4 * 1024);
    expect(inputs[0]).toContain(`the tool received all ${TEN_MB} bytes`);
    expect(JSON.stringify(second.request).length).toBeLessThan(64 * 1024);
    // The session file keeps the message whole.
    const stored = k
      .file(s.id)
      .messages()
      .flatMap((m) => m.message?.content ?? [])
      .find((b) => b.block.case === "toolUse");
    expect(stored?.block.case).toBe("toolUse");
    expect(String((stored!.block.value as Loose).input.content)).toHaveLength(TEN_MB);

    // A resumed session rebuilds the same shortened input: the cached prefix still matches.
    await k.close();
    const again = await h.kernel({ reuse: k, headlessAsk: "allow" });
    const resumed = await again.kernel.resumeSession(s.id);
    resumed.send("[huge-input] and now?");
    expect(await resumed.idle()).toBe(SessionStatus.COMPLETED);
    const third = again.requests("huge-input")[2]!;
    expect(toolTraffic(third.request).inputs).toEqual(inputs);
    await again.close();
  });
});

describe("a result larger than the model's window", () => {
  it("reaches the model cut to a quarter of the window with a note, and the file keeps it whole", async () => {
    const k = await h.kernel({ headlessAsk: "allow" });
    // alpha's window is 200,000 tokens: a 2 MB result (~500k tokens) could never be sent.
    k.script("huge-result", {
      turns: [calls(tool("r1", "tools__read", { path: "big.log", bytes: 2_000_000 })), reply("read it")],
    });
    const s = await k.kernel.startSession({ prompt: "[huge-result] read it" });
    expect(await s.idle(), failure(k, s.id)).toBe(SessionStatus.COMPLETED);
    const { results } = toolTraffic(k.requests("huge-result")[1]!.request);
    expect(results).toHaveLength(1);
    expect(Buffer.byteLength(results[0]!)).toBeLessThanOrEqual(200_000);
    expect(results[0]).toMatch(
      /\[… \d+ of this result's \d+ bytes are left out here to fit the model's context window/,
    );
    // The end of the result is kept too (a command's last lines say how it ended).
    expect(results[0]!.endsWith(`rrrr"}`)).toBe(true);
    const whole = k.file(s.id).toolResults()[0]!;
    expect(whole.outcome.case).toBe("result");
    expect(JSON.stringify(whole.outcome.value)).toContain("r".repeat(2_000_000));
    await k.close();
  });
});

describe("several huge results of one message", () => {
  it("share the quarter of the window, so together they still fit and the session goes on", async () => {
    const k = await h.kernel({ headlessAsk: "allow" });
    // Five parallel 300 KB results on alpha's 200,000-token window: each cut to a quarter of
    // the window alone would be 1 MB together, more than the whole window.
    const reads = [1, 2, 3, 4, 5].map((i) =>
      tool(`r${i}`, "tools__read", { path: `big${i}.log`, bytes: 300_000 }),
    );
    k.script("many-results", { turns: [calls(...reads), reply("read them")] });
    const s = await k.kernel.startSession({ prompt: "[many-results] read them" });
    expect(await s.idle(), failure(k, s.id)).toBe(SessionStatus.COMPLETED);
    const { results } = toolTraffic(k.requests("many-results")[1]!.request);
    expect(results).toHaveLength(5);
    for (const r of results) expect(Buffer.byteLength(r)).toBeLessThanOrEqual(40_000);
    expect(results.reduce((n, r) => n + Buffer.byteLength(r), 0)).toBeLessThanOrEqual(200_000);
    await k.close();
  });
});
