// The operator's /model choice and plan mode outlive the kernel that set them: the
// first-party commands provider (a real plugin process) sets them through ControlSession,
// the session file records each change as a session_setting event, and a new kernel
// resuming the file (its API and the frontend protocol's resume_session) puts them back,
// or, when the chosen model is gone, says so and runs on the profile's chain.
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { SessionSettingEventSchema } from "@pluggableharness/protocol/event";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { listSessions } from "@pluggableharness/state";
import { afterAll, describe, expect, it } from "vitest";
import { genericRenderTree } from "../../src/frontends/generic-render.ts";
import { Harness, type Loose, type Provider, reply, type TestClient, type TestKernel } from "./harness.ts";

const COMMANDS = fileURLToPath(new URL("../../../../providers/commands", import.meta.url));

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
  tools = ["tools.*", "commands.*"]
}`;

const commands: Provider = { name: "commands", fixture: "installed", firstParty: "commands" };
const second: Provider = { name: "second", fixture: "model" };

function kernelWith(extra: { stateDir?: string; withSecond?: boolean; reuse?: TestKernel } = {}) {
  return h.kernel({
    providers: [commands, ...(extra.withSecond ? [second] : [])],
    install: { commands: COMMANDS },
    hcl: PROFILE,
    ...(extra.stateDir ? { stateDir: extra.stateDir } : {}),
    ...(extra.reuse ? { reuse: extra.reuse } : {}),
  });
}

/** Runs an operator's slash command and waits until its run ended. */
async function slash(c: TestClient, id: string, name: string, args: string): Promise<void> {
  const from = c.events.length;
  c.send({ sessionId: id, event: { case: "slashCommand", value: { name, args } } });
  expect(await c.finished(id, from)).toBe(SessionStatus.COMPLETED);
}

const settings = (k: TestKernel, id: string) =>
  k
    .file(id)
    .events.filter((e) => e.kind === 12)
    .map((e) => fromBinary(SessionSettingEventSchema, e.payload));

/** The model the scripted vendor was asked for last in `scenario`, and the tools it was offered. */
function lastRequest(k: TestKernel, scenario: string) {
  const r = k.requests(scenario).at(-1)!;
  return { model: r.model as string, tools: ((r.request.tools ?? []) as Loose[]).map((t) => t.name) };
}

describe("/model and /plan across a resume", () => {
  it("a resumed session asks the model the operator chose, until /model default", async () => {
    const script = { turns: [reply("one"), reply("two"), reply("three")] };
    const k = await kernelWith();
    k.script("m", script);
    const c = k.client();
    const id = await c.create("[m] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k, "m").model).toBe("alpha");
    await slash(c, id, "model", "model/beta");
    expect(settings(k, id).map((s) => [s.change.case, s.change.value, s.origin])).toEqual([
      [
        "model",
        expect.objectContaining({ provider: "model", modelId: "beta", previous: "model/alpha" }),
        "/model",
      ],
    ]);
    expect(listSessions({ dir: k.stateDir }).sessions[0]).toMatchObject({
      model: "model/beta",
      modelOverridden: true,
    });
    await k.close();

    // A new kernel: the API's resume applies the recorded choice ahead of the profile's.
    const k2 = await kernelWith({ reuse: k });
    const handle = await k2.kernel.resumeSession(id);
    expect(handle.resumeWarnings).toEqual([]);
    handle.send("[m] again");
    expect(await handle.idle()).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k2, "m").model).toBe("beta");

    // /model default clears it, and the next resume is back on the profile's model.
    const c2 = k2.client();
    const from = c2.events.length;
    c2.send({ event: { case: "resumeSession", value: { requestId: "a", sessionId: id } } });
    await c2.next("sessionAttached", () => true, from);
    await slash(c2, id, "model", "default");
    expect(settings(k2, id).at(-1)!.change.value).toMatchObject({
      provider: "",
      modelId: "",
      previous: "model/beta",
    });
    expect(listSessions({ dir: k2.stateDir }).sessions[0]).toMatchObject({ modelOverridden: false });
    await k2.close();
    const k3 = await kernelWith({ reuse: k });
    const again = await k3.kernel.resumeSession(id);
    again.send("[m] third");
    expect(await again.idle()).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k3, "m").model).toBe("alpha");
    await k3.close();
  });

  it("a resume that names its own model (--model) leaves the recorded choice out of that run only", async () => {
    const k = await kernelWith();
    k.script("o", { turns: [reply("one"), reply("two"), reply("three")] });
    const c = k.client();
    const id = await c.create("[o] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    await slash(c, id, "model", "model/beta");
    await k.close();
    const k2 = await kernelWith({ reuse: k });
    const handle = await k2.kernel.resumeSession(id, { restoreModel: false });
    handle.send("[o] again");
    expect(await handle.idle()).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k2, "o").model).toBe("alpha");
    await k2.close();
    // Still recorded: the next plain resume uses it.
    expect(listSessions({ dir: k.stateDir }).sessions[0]).toMatchObject({ model: "model/beta" });
    const k3 = await kernelWith({ reuse: k });
    const plain = await k3.kernel.resumeSession(id);
    plain.send("[o] third");
    expect(await plain.idle()).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k3, "o").model).toBe("beta");
    await k3.close();
  });

  it("plan mode and the model set with /plan and /model hold after a resume through the frontend protocol", async () => {
    const k = await kernelWith();
    k.script("p", { turns: [reply("one"), reply("two")] });
    const c = k.client();
    const id = await c.create("[p] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k, "p").tools).toContain("tools__remove");
    await slash(c, id, "plan", "on");
    await slash(c, id, "model", "model/beta");
    await k.close();

    const k2 = await kernelWith({ reuse: k });
    const c2 = k2.client();
    const from = c2.events.length;
    c2.send({ event: { case: "resumeSession", value: { requestId: "r", sessionId: id } } });
    await c2.next("sessionAttached", () => true, from);
    c2.send({
      sessionId: id,
      event: {
        case: "userMessage",
        value: { content: [{ block: { case: "text", value: { text: "go" } } }] },
      },
    });
    expect(await c2.finished(id, from)).toBe(SessionStatus.COMPLETED);
    const sent = lastRequest(k2, "p").tools;
    // Resource tools are withheld from the request; the data sources stay.
    expect(sent).not.toContain("tools__remove");
    expect(sent.length).toBeGreaterThan(0);
    // The way `agent serve` and a frontend's /resume continue a session: the model too.
    expect(lastRequest(k2, "p").model).toBe("beta");
    await k2.close();
  });

  it("a chosen model whose provider left agent.hcl: the resume warns and uses the profile's model", async () => {
    const k = await kernelWith({ withSecond: true });
    k.script("g", { turns: [reply("one"), reply("two")] });
    const c = k.client();
    const id = await c.create("[g] start");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    await slash(c, id, "model", "second/beta");
    await k.close();

    // Same sessions directory, a project whose agent.hcl no longer has "second".
    const k2 = await kernelWith({ stateDir: k.stateDir });
    k2.script("g", { turns: [reply("one"), reply("two")] });
    const handle = await k2.kernel.resumeSession(id);
    expect(handle.resumeWarnings).toEqual([
      'the model this session was switched to, second/beta, is no longer available (provider "second" is not in agent.hcl); it continues with its profile\'s model (model/alpha)',
    ]);
    expect(k2.logs.some((l) => l.level === "warn" && /second\/beta/.test(l.message))).toBe(true);
    handle.send("[g] again");
    expect(await handle.idle()).toBe(SessionStatus.COMPLETED);
    expect(lastRequest(k2, "g").model).toBe("alpha");
    // The drop is on the record, where it happened, as a warning in the transcript.
    const dropped = k2
      .file(id)
      .events.filter((e) => e.kind === 12)
      .at(-1)!;
    const s = fromBinary(SessionSettingEventSchema, dropped.payload);
    expect([s.origin, s.change.value]).toEqual([
      "resume",
      expect.objectContaining({ provider: "", previous: "second/beta" }),
    ]);
    const line = genericRenderTree(dropped).root;
    expect(line?.node.case === "text" && line.node.value.content).toBe(
      'Model second/beta is no longer available (provider "second" is not in agent.hcl): back to the profile\'s model',
    );
    expect(listSessions({ dir: k2.stateDir }).sessions[0]).toMatchObject({ modelOverridden: false });
    await k2.close();
  });
});
