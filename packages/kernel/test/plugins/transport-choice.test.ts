// Which transport a provider runs on once the plugin sandbox is in play (docs/decisions/plugin-runtime.md,
// "Transports", the sandbox): a thread of the kernel's process cannot be put in bubblewrap,
// so a first-party tool provider the sandbox confines runs as a thread of the sandbox host
// ("hosted", one bubblewrap-confined process for such providers), also when agent.hcl asks
// for a worker; a process of its own only when asked. The hazard fixture is installed as
// the first-party "task" package, so it is resolved exactly as a shipped tool provider.
import { fileURLToPath } from "node:url";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { providerTransport } from "../../src/index.ts";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const HAZARD = fileURLToPath(new URL("../../../runtime/test/fixtures/hazard", import.meta.url));

const h = new Harness();
afterAll(() => h.dispose());

function kernelWith(
  isolation: "worker" | "process" | undefined,
  sandbox: "required" | "best_effort" | "off",
) {
  return h.kernel({
    providers: [
      { name: "hazard", fixture: "installed", firstParty: "task", ...(isolation ? { isolation } : {}) },
    ],
    install: { task: HAZARD },
    sandbox: true,
    hcl: `
settings {
  sandbox = "${sandbox}"
}

agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["hazard.*"]
}`,
  });
}

const isolationOf = (k: TestKernel) => k.kernel.listProviders().find((p) => p.name === "hazard")?.isolation;
const overrideWarnings = (k: TestKernel) =>
  k.logs.filter((l) => l.level === "warn" && /provider "hazard"/.test(l.message));

async function callOk(k: TestKernel, id: string): Promise<string[]> {
  k.script(id, { turns: [calls(tool(`${id}1`, "hazard__ok", {})), reply("done")] });
  const s = await k.kernel.startSession({ prompt: `[${id}] go` });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  return k
    .file(s.id)
    .toolResults()
    .map((r) => (r.outcome.case === "error" ? `error: ${r.outcome.value.message}` : "result"));
}

describe("transport choice and the plugin sandbox", () => {
  it("runs a sandboxed first-party tool provider in the sandbox host by default (described in a worker, then moved)", async () => {
    const k = await kernelWith(undefined, "best_effort");
    expect(isolationOf(k)).toBe("hosted");
    expect(overrideWarnings(k)).toEqual([]);
    expect(await callOk(k, "dflt")).toEqual(["result"]);
    await k.close();
  });

  it("takes a worker thread asked for in agent.hcl as a thread of the sandbox host, without a warning", async () => {
    const k = await kernelWith("worker", "required");
    expect(isolationOf(k)).toBe("hosted");
    expect(overrideWarnings(k)).toEqual([]);
    // Under "required" a call only runs if the sandbox does: it runs.
    expect(await callOk(k, "req")).toEqual(["result"]);
    await k.close();
  });

  it("runs it as a sandboxed process of its own when agent.hcl asks for one", async () => {
    const k = await kernelWith("process", "required");
    expect(isolationOf(k)).toBe("process");
    expect(await callOk(k, "proc")).toEqual(["result"]);
    await k.close();
  });

  it("runs it in a worker thread when the sandbox is off", async () => {
    const k = await kernelWith("worker", "off");
    expect(isolationOf(k)).toBe("worker");
    expect(overrideWarnings(k)).toEqual([]);
    expect(await callOk(k, "off")).toEqual(["result"]);
    await k.close();
  });

  it("keeps third-party providers in a process whatever is asked, hosts sandboxed first-party ones, defaults the rest to a worker", () => {
    expect(providerTransport({ origin: "dev_override" }, "worker", false)).toEqual({ isolation: "process" });
    expect(providerTransport({ origin: "dev_override" }, undefined, true)).toEqual({ isolation: "process" });
    expect(providerTransport({ origin: "first_party" }, undefined, false).isolation).toBe("worker");
    expect(providerTransport({ origin: "first_party" }, "process", false).isolation).toBe("process");
    expect(providerTransport({ origin: "first_party" }, "worker", true)).toEqual({ isolation: "hosted" });
    expect(providerTransport({ origin: "first_party" }, undefined, true)).toEqual({ isolation: "hosted" });
    expect(providerTransport({ origin: "first_party" }, "process", true)).toEqual({ isolation: "process" });
  });
});
