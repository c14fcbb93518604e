// Hook dispatch through HookSubscriberService: transform (only pre-model-call's messages
// may change), observe (failures never stop anything), veto (fail closed on errors,
// timeouts and malformed answers), declaration order, and hook_error records
// attributed to the failing subscriber.
import { fromBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { HookErrorEventSchema } from "@pluggableharness/protocol/event";
import { HookErrorCategory, HookMode } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, type Loose, reply, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

interface Sub {
  readonly provider: "first" | "second";
  readonly point: string;
  readonly mode: "observe" | "transform" | "veto";
  readonly timeoutMs?: number;
}

async function kernelWith(
  subs: readonly Sub[],
  behavior: { first?: Record<string, string>; second?: Record<string, string> },
  scripts: Record<string, unknown>,
): Promise<TestKernel> {
  const hooks = subs
    .map(
      (s) => `
hook "${s.point}" {
  provider = "${s.provider}"
  mode     = "${s.mode}"${s.timeoutMs ? `\n  timeout_ms = ${s.timeoutMs}` : ""}
}`,
    )
    .join("\n");
  return h.kernel({
    providers: [
      {
        name: "first",
        fixture: "hooks",
        attrs: { behavior: JSON.stringify(JSON.stringify(behavior.first ?? {})) },
      },
      {
        name: "second",
        fixture: "hooks",
        attrs: { behavior: JSON.stringify(JSON.stringify(behavior.second ?? {})) },
      },
    ],
    hcl: `
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}
${hooks}`,
    scripts,
  });
}

function hookErrors(k: TestKernel, sessionId: string) {
  return k
    .file(sessionId)
    .events.filter((e) => e.kind === EventKind.HOOK_ERROR)
    .map((e) => ({ producer: e.producer, error: fromBinary(HookErrorEventSchema, e.payload).error! }));
}

const seen = (k: TestKernel) => k.hookLog().map((e) => `${e["subscriber"]}:${e["point"]}`);
const WRITE = { turns: [calls(tool("w", "tools__write", { path: "a", content: "1" })), reply("done")] };

describe("transform", () => {
  it("rewrites the messages sent to the model at pre-model-call", async () => {
    const k = await kernelWith(
      [{ provider: "first", point: "pre-model-call", mode: "transform" }],
      { first: { "pre-model-call": "inject:Remember: answer in French." } },
      { inject: { turns: [reply("D'accord.")] } },
    );
    const s = await k.kernel.startSession({ prompt: "[inject] hello" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const messages = k.requests("inject")[0]!.request.messages;
    expect(messages.at(-1).content[0].text.text).toBe("Remember: answer in French.");
    // The transform shapes the request only; the session's own history is unchanged.
    expect(k.file(s.id).messages()).toHaveLength(2);
    await k.close();
  });

  it("rejects a transform that changes an immutable field: hook_error, no model call, the session fails", async () => {
    const k = await kernelWith(
      [
        { provider: "first", point: "pre-model-call", mode: "transform" },
        { provider: "second", point: "pre-model-call", mode: "observe" },
      ],
      { first: { "pre-model-call": "mutate" } },
      { mutate: { turns: [reply("never")] } },
    );
    const c = k.client({ interactive: false });
    const id = await c.create("[mutate] hello");
    expect(await c.finished(id)).toBe(SessionStatus.FAILED);
    expect(k.requests("mutate")).toEqual([]);
    expect(seen(k)).toEqual(["first:pre-model-call"]); // the chain stopped there
    const [err] = hookErrors(k, id);
    expect(err!.error.category).toBe(HookErrorCategory.INVALID_RESPONSE);
    expect(err!.error.mode).toBe(HookMode.TRANSFORM);
    expect(err!.error.message).toContain("other than messages");
    expect([err!.producer.name, err!.producer.version, err!.producer.category]).toEqual([
      "test-hooks",
      "3.0.0",
      PluginCategory.TOOL,
    ]);
    expect(c.of("sessionStatusUpdate", id).at(-1)!.event.value.detail).toContain("hook_error");
    await k.close();
  });

  it("stops the chain on a failing transform at a point with nothing to transform, and the loop goes on", async () => {
    const k = await kernelWith(
      [
        { provider: "first", point: "post-tool-call", mode: "transform" },
        { provider: "second", point: "post-tool-call", mode: "observe" },
      ],
      { first: { "post-tool-call": "fail" } },
      { tfail: WRITE },
    );
    const s = await k.kernel.startSession({ prompt: "[tfail] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(seen(k)).toEqual(["first:post-tool-call"]);
    expect(hookErrors(k, s.id).map((e) => e.error.category)).toEqual([HookErrorCategory.TRANSFORM_FAILED]);
    await k.close();
  });
});

describe("observe", () => {
  it("records a failing or malformed observer and carries on with the chain and the loop", async () => {
    const k = await kernelWith(
      [
        { provider: "first", point: "post-model-response", mode: "observe" },
        { provider: "second", point: "post-model-response", mode: "observe" },
      ],
      { first: { "post-model-response": "fail" }, second: { "post-model-response": "invalid" } },
      { obs: { turns: [reply("fine")] } },
    );
    const s = await k.kernel.startSession({ prompt: "[obs] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(seen(k)).toEqual(["first:post-model-response", "second:post-model-response"]);
    expect(hookErrors(k, s.id).map((e) => e.error.category)).toEqual([
      HookErrorCategory.OBSERVE_FAILED,
      HookErrorCategory.INVALID_RESPONSE,
    ]);
    await k.close();
  });
});

describe("veto", () => {
  it("fails closed when a veto subscriber times out", async () => {
    const k = await kernelWith(
      [{ provider: "first", point: "plan-ready", mode: "veto", timeoutMs: 200 }],
      { first: { "plan-ready": "hang" } },
      { vhang: WRITE },
    );
    const s = await k.kernel.startSession({ prompt: "[vhang] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(k.invocations()).toEqual([]);
    const item = k.file(s.id).planItems[0]!;
    expect([item.decisionText, item.decidedBy]).toEqual(["deny", "first"]);
    const [err] = hookErrors(k, s.id);
    expect([err!.error.category, err!.error.timedOut]).toEqual([HookErrorCategory.VETO_FAILED, true]);
    await k.close();
  });

  for (const [behaviour, why] of [
    ["invalid", "a veto subscriber answered observe"],
    ["unspecified", "the veto decision is unspecified"],
    ["fail", "failed on purpose"],
  ] as const) {
    it(`treats a veto subscriber that answers ${behaviour} as a deny`, async () => {
      const k = await kernelWith(
        [
          { provider: "first", point: "plan-ready", mode: "veto" },
          { provider: "second", point: "plan-ready", mode: "observe" },
        ],
        { first: { "plan-ready": behaviour } },
        { [`v${behaviour}`]: WRITE },
      );
      const s = await k.kernel.startSession({ prompt: `[v${behaviour}] go` });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      expect(k.invocations()).toEqual([]);
      // A deny short-circuits the subscribers declared after it.
      expect(seen(k)).toEqual(["first:plan-ready"]);
      const [err] = hookErrors(k, s.id);
      expect(err!.error.message).toContain(why);
      expect(k.file(s.id).planItems[0]!.decisionText).toBe("deny");
      await k.close();
    });
  }

  it("visits subscribers of one point in declaration order, observers and vetoes interleaved", async () => {
    const k = await kernelWith(
      [
        { provider: "second", point: "plan-ready", mode: "observe" },
        { provider: "first", point: "plan-ready", mode: "veto" },
      ],
      {},
      { vorder: WRITE },
    );
    const s = await k.kernel.startSession({ prompt: "[vorder] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(seen(k)).toEqual(["second:plan-ready", "first:plan-ready"]);
    expect(k.hookLog().map((e: Loose) => e.mode)).toEqual([HookMode.OBSERVE, HookMode.VETO]);
    expect(k.invocations().filter((e) => e["phase"] === "start")).toHaveLength(1);
    await k.close();
  });
});
