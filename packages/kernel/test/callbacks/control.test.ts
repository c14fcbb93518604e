// ControlSession: the session controls answer only while the calling plugin serves the
// operator's own direct call for that session (a slash command or an action), never a
// model's tool call, another plugin's call or another session; /model switches the
// next turn's candidate, a revoked rule stops applying.
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { PolicyEngine } from "@pluggableharness/config";
import { type SessionSettingEvent, SessionSettingEventSchema } from "@pluggableharness/protocol/event";
import { ControlSessionRequestSchema, EventKind } from "@pluggableharness/protocol/kernel";
import { describe, expect, it } from "vitest";
import { type ControlDeps, controlSession } from "../../src/callbacks/control.ts";
import { InvocationTracker } from "../../src/callbacks/invocations.ts";
import type { Session } from "../../src/loop/session/session.ts";
import { SettingsState } from "../../src/loop/session/settings-state.ts";
import type { ProviderRegistry } from "../../src/plugins/providers.ts";

const PEER = { plugin: "commands", instance: "1", producers: new Map() } as never;

function fixture() {
  const tracker = new InvocationTracker();
  const policy = new PolicyEngine([]);
  const spec = (id: string) => ({ id, contextWindow: 1000n, supportsVision: true });
  const providers = {
    get: (n: string) =>
      n === "vendor"
        ? {
            models: {
              models: new Map([
                ["big", spec("big")],
                ["small", spec("small")],
              ]),
            },
          }
        : undefined,
    modelProviders: () => [
      {
        name: "vendor",
        models: {
          models: new Map([
            ["big", spec("big")],
            ["small", spec("small")],
          ]),
        },
      },
    ],
    all: () => [],
  } as unknown as ProviderRegistry;
  // What the session file is told: session_setting events and the model_override column.
  const recorded: { events: SessionSettingEvent[]; overrides: (string | undefined)[] } = {
    events: [],
    overrides: [],
  };
  const session = {
    id: "S1",
    deps: { providers, kernelProducer: {} },
    writer: {
      transaction: (fn: () => void) => fn(),
      setModelOverride: (m: string | undefined) => recorded.overrides.push(m),
    },
    log: {
      persist: (kind: EventKind, _producer: unknown, payload: Uint8Array) => {
        expect(kind).toBe(EventKind.SESSION_SETTING);
        recorded.events.push(fromBinary(SessionSettingEventSchema, payload));
      },
    },
    profile: {
      name: "default",
      model: { primary: { provider: "vendor", id: "big", params: {} }, fallbacks: [] },
    },
    policy,
    settings: new SettingsState(),
    unavailableModels: new Map(),
    candidates(this: Session) {
      const chain = [{ provider: "vendor", modelId: "big" }];
      const o = this.settings.modelOverride;
      return o ? [o, ...chain] : chain;
    },
  } as unknown as Session;
  const deps: ControlDeps = {
    session: (id) => (id === "S1" ? session : undefined),
    tracker,
    providers: () => providers,
    rootPolicy: () => policy,
    projectDir: "/nonexistent",
    listSessions: () => [],
  };
  const call = (
    operation: MessageInitShape<typeof ControlSessionRequestSchema>["operation"],
    sessionId = "S1",
  ) => controlSession(deps, PEER, create(ControlSessionRequestSchema, { sessionId, operation }));
  return { tracker, session, policy, call, recorded };
}

/** What the gate does around an operator's direct call into the provider. */
function operatorCall(tracker: InvocationTracker, plugin = "commands", session = "S1") {
  const endOperator = tracker.beginOperator(plugin, session);
  const endTool = tracker.begin(plugin, session, "tool");
  return () => {
    endTool();
    endOperator();
  };
}

describe("ControlSession", () => {
  it("refuses a plugin that serves no operator call: a model's tool call, nothing at all, another session", async () => {
    const { tracker, call, session, recorded } = fixture();
    const plan = { case: "setPlanMode" as const, value: { on: false } };
    session.settings.planMode = true;
    await expect(call(plan)).rejects.toMatchObject({ code: 7 });
    // A model's call of the same tool: the tracker has a tool call, but no operator call.
    const endModelCall = tracker.begin("commands", "S1", "tool");
    await expect(call(plan)).rejects.toMatchObject({ code: 7 });
    endModelCall();
    // An operator call for another session does not open this one.
    const end = operatorCall(tracker, "commands", "S2");
    await expect(call(plan)).rejects.toMatchObject({ code: 7 });
    end();
    // Another plugin's operator call does not open it for this one.
    const other = operatorCall(tracker, "someone-else");
    await expect(call(plan)).rejects.toMatchObject({ code: 7 });
    other();
    expect(session.settings.planMode).toBe(true);
    // The operator's own call: plan mode goes off.
    const mine = operatorCall(tracker);
    await expect(call(plan)).resolves.toMatchObject({ result: { case: "planMode", value: { on: false } } });
    mine();
    expect(session.settings.planMode).toBe(false);
    // Recorded once, for the one change the operator made.
    expect(recorded.events.map((e) => [e.change.case, e.change.value, e.origin])).toEqual([
      ["planMode", expect.objectContaining({ on: false }), "/plan"],
    ]);
    // Once the call ended, the door is shut again.
    await expect(call({ case: "setPlanMode", value: { on: true } })).rejects.toMatchObject({ code: 7 });
  });

  it("switches the next turn's model, refuses an unknown one, and goes back to the profile's", async () => {
    const { tracker, call, session, recorded } = fixture();
    const end = operatorCall(tracker);
    await call({ case: "setModel", value: { provider: "vendor", modelId: "small" } });
    expect(session.candidates()[0]).toMatchObject({ provider: "vendor", modelId: "small" });
    await expect(
      call({ case: "setModel", value: { provider: "vendor", modelId: "nope" } }),
    ).rejects.toMatchObject({
      code: 5,
    });
    await expect(
      call({ case: "setModel", value: { provider: "ghost", modelId: "x" } }),
    ).rejects.toMatchObject({
      code: 5,
    });
    const listed = await call({ case: "listModels", value: {} });
    expect(listed.result).toMatchObject({
      case: "models",
      value: { overridden: true, current: { modelId: "small" } },
    });
    await call({ case: "setModel", value: { provider: "", modelId: "" } });
    expect(session.candidates()[0]).toMatchObject({ modelId: "big" });
    // Each switch is in the session file (the refused ones are not), with what it replaced.
    expect(recorded.events.map((e) => e.change.value)).toEqual([
      expect.objectContaining({ provider: "vendor", modelId: "small", previous: "vendor/big" }),
      expect.objectContaining({ provider: "", modelId: "", previous: "vendor/small" }),
    ]);
    expect(recorded.overrides).toEqual(["vendor/small", undefined]);
    end();
  });

  it("revokes a session rule: the engine no longer applies it", async () => {
    const { tracker, call, policy } = fixture();
    const rule = policy.rememberForSession("exec", "bash", "allow", { command: ["make deploy"] });
    const callOf = {
      kind: "resource" as const,
      provider: "exec",
      tool_name: "bash",
      risk: "high" as const,
      args: { command: "make deploy" },
    };
    expect(policy.evaluate(callOf).decision).toBe("allow");
    const end = operatorCall(tracker);
    const listed = await call({ case: "listPermissionRules", value: {} });
    expect(listed.result).toMatchObject({
      case: "permissionRules",
      value: { rules: [{ name: rule.name, scope: "session" }] },
    });
    const revoked = await call({ case: "revokePermissionRule", value: { name: rule.name } });
    expect(revoked.result).toMatchObject({ value: { rules: [], revoked: { name: rule.name } } });
    expect(policy.evaluate(callOf).decision).toBe("ask");
    await expect(call({ case: "revokePermissionRule", value: { name: rule.name } })).rejects.toMatchObject({
      code: 5,
    });
    end();
  });

  it("queues the kernel's compact-now, and says so when the build has none", async () => {
    const { tracker, call, session } = fixture();
    const end = operatorCall(tracker);
    await expect(call({ case: "compact", value: { instructions: "keep the API" } })).rejects.toMatchObject({
      code: 14,
    });
    const asked: string[] = [];
    Object.assign(session, {
      compact: (instructions: string) => {
        asked.push(instructions);
        return asked.length > 1 ? { message: "no compactor context provider is configured" } : undefined;
      },
    });
    await expect(call({ case: "compact", value: { instructions: "keep the API" } })).resolves.toMatchObject({
      result: { case: "compacted", value: { queued: true } },
    });
    await expect(call({ case: "compact", value: { instructions: "" } })).rejects.toMatchObject({
      code: 9,
      message: expect.stringContaining("no compactor"),
    });
    expect(asked).toEqual(["keep the API", ""]);
    end();
  });
});
