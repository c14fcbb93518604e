// The memory write triggers: a memory provider serving HookSubscriberService is implicitly
// subscribed (no hook block) in observe mode to post-model-response, every turn, and
// session-end, once per run however it ends (done, kernel shutdown mid-run), when its
// MemoryCapabilities advertise them; one that does not advertise them gets nothing. A
// failing or hanging subscriber is a hook_error (bounded by the hook timeout), never a
// failed turn. run_prompt carries the operator's message on the run's first turn only, and
// never a secret environment value.
import { fromBinary } from "@bufbuild/protobuf";
import { HookPoint } from "@pluggableharness/protocol/common";
import { HookErrorEventSchema } from "@pluggableharness/protocol/event";
import { HookErrorCategory, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { MemoryScope, MemoryService, MemoryType } from "@pluggableharness/protocol/memory";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, expect, it } from "vitest";
import type { InProcessPluginFactory } from "../../src/index.ts";
import { calls, Harness, reply, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

interface Seen {
  point: string;
  turnId: string;
  runPrompt?: string;
  status?: SessionStatus;
}

/** An inline memory provider that records every DispatchHook it gets. */
function memoryPlugin(
  opts: { advertise: boolean; fail?: boolean; hang?: boolean },
  seen: Seen[],
): InProcessPluginFactory {
  const none = () => {
    throw new Error("not in this fixture");
  };
  return () =>
    ({
      packageJson: {
        name: "test-memory-auto",
        version: "1.0.0",
        pluggableharness: { name: "test-memory-auto" },
      },
      services: [
        {
          service: MemoryService,
          implementation: {
            getCapabilities: () => ({
              capabilities: {
                defaultTokenBudget: 100n,
                supportedTypes: [MemoryType.PROJECT],
                supportedScopes: [MemoryScope.PROJECT],
                configSchema: { attributes: [] },
                supportedHookPoints: opts.advertise
                  ? [HookPoint.POST_MODEL_RESPONSE, HookPoint.SESSION_END]
                  : [],
              },
            }),
            configure: () => ({ result: {} }),
            recall: () => ({ records: [] }),
            record: none,
            updateRecord: none,
            deleteRecord: none,
            listRecords: none,
            getRecord: none,
            approveRecord: none,
            rejectRecord: none,
            render: () => ({}),
          },
        },
        {
          service: HookSubscriberService,
          implementation: {
            dispatchHook: (req: {
              callContext?: { turnId: string };
              payload?: { point: { case?: string; value?: { runPrompt?: string; status?: SessionStatus } } };
            }) => {
              const p = req.payload?.point;
              seen.push({
                point: p?.case ?? "",
                turnId: req.callContext?.turnId ?? "",
                ...(p?.case === "postModelResponse" ? { runPrompt: p.value?.runPrompt ?? "" } : {}),
                ...(p?.case === "sessionEnd" ? { status: p.value?.status } : {}),
              });
              if (opts.fail) throw new Error("memory store unavailable");
              if (opts.hang) return new Promise(() => {});
              return { outcome: { case: "observe", value: {} } };
            },
          },
        },
      ],
    }) as ReturnType<InProcessPluginFactory>;
}

const READS = {
  turns: [
    calls(tool("r1", "tools__read", { path: "a" })),
    calls(tool("r2", "tools__read", { path: "b" })),
    reply("done"),
  ],
};

async function kernel(
  auto: Seen[],
  quiet: Seen[],
  scripts: Record<string, unknown>,
  extra: { fail?: boolean; hang?: boolean; env?: Record<string, string>; hcl?: string } = {},
): Promise<TestKernel> {
  return h.kernel({
    headlessAsk: "allow",
    providers: [
      {
        name: "mauto",
        fixture: "memory",
        factory: memoryPlugin(
          { advertise: true, ...(extra.fail ? { fail: true } : {}), ...(extra.hang ? { hang: true } : {}) },
          auto,
        ),
      },
      { name: "mquiet", fixture: "memory", factory: memoryPlugin({ advertise: false }, quiet) },
    ],
    scripts,
    ...(extra.env ? { env: extra.env } : {}),
    ...(extra.hcl ? { hcl: extra.hcl } : {}),
  });
}

it("dispatches post-model-response every turn and session-end once, only to a provider advertising them", async () => {
  const auto: Seen[] = [];
  const quiet: Seen[] = [];
  const k = await kernel(auto, quiet, { reads: READS });
  const s = await k.kernel.startSession({ prompt: "[reads] Remember that the API is on port 8080." });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  expect(auto.map((x) => x.point)).toEqual([
    "postModelResponse",
    "postModelResponse",
    "postModelResponse",
    "sessionEnd",
  ]);
  // Each turn its own turn id; run_prompt on the first turn only; session-end outside a turn.
  expect(new Set(auto.slice(0, 3).map((x) => x.turnId)).size).toBe(3);
  expect(auto.map((x) => x.runPrompt)).toEqual([
    "[reads] Remember that the API is on port 8080.",
    "",
    "",
    undefined,
  ]);
  expect(auto[3]).toMatchObject({ turnId: "", status: SessionStatus.COMPLETED });
  expect(quiet).toEqual([]);
  await k.close();
});

it("fires session-end once when the kernel shuts down mid-run", async () => {
  const auto: Seen[] = [];
  const k = await kernel(auto, [], {
    hold: { turns: [calls(tool("r", "tools__read", { path: "a", hold: true })), reply("never")] },
  });
  const s = await k.kernel.startSession({ prompt: "[hold] wait" });
  await expect.poll(() => auto.length).toBe(1);
  await k.close();
  expect(auto.map((x) => x.point)).toEqual(["postModelResponse", "sessionEnd"]);
  expect(auto[1]?.status).toBe(SessionStatus.CANCELLED);
  expect(s.status()).toBe(SessionStatus.CANCELLED);
});

it("a failing memory subscriber is a hook_error, never a failed turn", async () => {
  const auto: Seen[] = [];
  const k = await kernel(auto, [], { one: { turns: [reply("fine")] } }, { fail: true });
  const s = await k.kernel.startSession({ prompt: "[one] hi" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  const errors = k
    .file(s.id)
    .events.filter((e) => e.kind === EventKind.HOOK_ERROR)
    .map((e) => fromBinary(HookErrorEventSchema, e.payload).error!);
  expect(errors.map((e) => [e.point, e.category])).toEqual([
    [HookPoint.POST_MODEL_RESPONSE, HookErrorCategory.OBSERVE_FAILED],
    [HookPoint.SESSION_END, HookErrorCategory.OBSERVE_FAILED],
  ]);
  await k.close();
});

it("a hanging memory subscriber is cut off at the hook timeout and the session completes", async () => {
  const auto: Seen[] = [];
  const k = await kernel(
    auto,
    [],
    { slow: { turns: [reply("fine")] } },
    { hang: true, hcl: 'settings {\n  sandbox = "off"\n  default_hook_timeout_ms = 150\n}\n' },
  );
  const s = await k.kernel.startSession({ prompt: "[slow] hi" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  expect(auto.map((x) => x.point)).toEqual(["postModelResponse", "sessionEnd"]);
  const timedOut = k
    .file(s.id)
    .events.filter((e) => e.kind === EventKind.HOOK_ERROR)
    .map((e) => fromBinary(HookErrorEventSchema, e.payload).error!.timedOut);
  expect(timedOut).toEqual([true, true]);
  await k.close();
});

it("withholds a run prompt that holds a secret environment value", async () => {
  const secret = "sk-ant-api03-memoryCANARYcanary0042";
  const auto: Seen[] = [];
  const k = await kernel(auto, [], { sec: { turns: [reply("ok")] } }, { env: { ANTHROPIC_API_KEY: secret } });
  const s = await k.kernel.startSession({ prompt: `[sec] Remember that the key is ${secret}` });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  expect(auto[0]).toMatchObject({ point: "postModelResponse", runPrompt: "" });
  expect(JSON.stringify(auto)).not.toContain(secret);
  await k.close();
});
