// KernelCallbackService as a plugin sees it: Emit (validated, attributed to the calling
// plugin, kernel-assigned id and sequence), Log (into the kernel's log, attributed),
// CountTokens (exact through the model provider, else the documented fallback) and
// RunSession (not available yet, with a clear message).
import { PluginCategory } from "@pluggableharness/protocol/common";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

describe("kernel callbacks", () => {
  it("serves Emit, Log, CountTokens and RunSession to a plugin serving a call", async () => {
    const k = await h.kernel({
      scripts: {
        cb: {
          turns: [
            calls(
              tool("e1", "tools__emitter", { text: "one two three four" }),
              tool("e2", "tools__emitter", { session_id: "01JZZZZZZZZZZZZZZZZZZZZZZZ" }),
              tool("e3", "tools__emitter", { kind: 0 }),
            ),
            reply("ok"),
          ],
        },
      },
    });
    const s = await k.kernel.startSession({ prompt: "[cb] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const file = k.file(s.id);
    // The three calls run concurrently: results are persisted in completion order.
    const byCall = new Map(
      file
        .toolResults()
        .map((r) => [r.toolCallId, r.outcome.case === "result" ? r.outcome.value.payload! : {}]),
    );
    const [ok, otherSession, unspecified] = ["e1", "e2", "e3"].map((id) => byCall.get(id));

    // Emit: persisted with a kernel-assigned id and sequence, attributed to the caller.
    const emitted = file.events.find((e) => e.kind === EventKind.MEMORY_WRITE)!;
    expect(ok!["id"]).toBe(emitted.id);
    expect(ok!["sequence"]).toBe(emitted.sequence);
    expect([emitted.producer.name, emitted.producer.version, emitted.producer.category]).toEqual([
      "test-tools",
      "2.0.0",
      PluginCategory.TOOL,
    ]);
    expect(file.events.filter((e) => e.kind === EventKind.MEMORY_WRITE)).toHaveLength(1);
    expect(String(otherSession!["emitError"])).toContain("PERMISSION_DENIED");
    expect(String(otherSession!["emitError"])).toContain(
      "not serving a call for session 01JZZZZZZZZZZZZZZZZZZZZZZZ",
    );
    expect(String(unspecified!["emitError"])).toContain("EVENT_KIND_UNSPECIFIED");

    // CountTokens: exact through the model provider's tokenizer, else ceil(bytes / 4), inexact.
    expect([ok!["count"], ok!["exact"]]).toEqual([4, true]);
    expect([ok!["fallbackCount"], ok!["fallbackExact"]]).toEqual([3, false]);

    // The emitter is a data source, not a spawn-capable tool: RunSession is refused.
    expect(String(ok!["runSessionError"])).toContain("PERMISSION_DENIED");
    expect(String(ok!["runSessionError"])).toContain("no call of a spawn-capable tool");

    // Log: in the kernel's log, attributed to the plugin and the session.
    const line = k.logs.find((l) => l.message === "emitter says hello")!;
    expect(line).toMatchObject({
      level: "warn",
      source: "plugin",
      plugin: "tools",
      logger: "fixture.emitter",
      sessionId: s.id,
      fields: { answer: 42 },
    });
    await k.close();
  });
});
