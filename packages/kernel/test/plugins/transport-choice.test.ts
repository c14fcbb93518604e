// Which transport a provider runs on once the plugin sandbox is in play (docs/decisions/plugin-runtime.md,
// "Transports", the sandbox): a worker thread shares the kernel's process and cannot
// be put in bubblewrap, so a tool provider the sandbox confines runs as its own process,
// by default and even when agent.hcl asks for a worker. The hazard fixture is installed as
// the first-party "task" package, so it is resolved exactly as a shipped tool provider.
import { fileURLToPath } from "node:url";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { providerTransport } from "../../src/index.ts";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const HAZARD = fileURLToPath(new URL("../../../runtime/test/fixtures/hazard", import.meta.url));

const h = new Harness();
afterAll(() => h.dispose());

function kernelWith(isolation: "worker" | undefined, sandbox: "required" | "best_effort" | "off") {
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
  k.logs.filter((l) => l.level === "warn" && /not in a worker thread as asked/.test(l.message));

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
  it("runs a sandboxed first-party tool provider as a process by default (described in a worker, then moved)", async () => {
    const k = await kernelWith(undefined, "best_effort");
    expect(isolationOf(k)).toBe("process");
    expect(overrideWarnings(k)).toEqual([]);
    expect(await callOk(k, "dflt")).toEqual(["result"]);
    await k.close();
  });

  it("refuses a worker thread asked for in agent.hcl: it runs as a sandboxed process and says why", async () => {
    const k = await kernelWith("worker", "required");
    expect(isolationOf(k)).toBe("process");
    expect(overrideWarnings(k)).toHaveLength(1);
    expect(overrideWarnings(k)[0]!.message).toContain('provider "hazard"');
    // Under "required" a call only runs if the sandbox does: it runs.
    expect(await callOk(k, "req")).toEqual(["result"]);
    await k.close();
  });

  it("runs it in a worker thread when the sandbox is off", async () => {
    const k = await kernelWith("worker", "off");
    expect(isolationOf(k)).toBe("worker");
    expect(overrideWarnings(k)).toEqual([]);
    expect(await callOk(k, "off")).toEqual(["result"]);
    await k.close();
  });

  it("keeps third-party providers in a process whatever is asked, and defaults the rest to a worker", () => {
    expect(providerTransport({ origin: "dev_override" }, "worker", false)).toEqual({
      isolation: "process",
      overridden: false,
    });
    expect(providerTransport({ origin: "first_party" }, undefined, false).isolation).toBe("worker");
    expect(providerTransport({ origin: "first_party" }, "process", false).isolation).toBe("process");
    expect(providerTransport({ origin: "first_party" }, "worker", true)).toEqual({
      isolation: "process",
      overridden: true,
    });
  });
});
