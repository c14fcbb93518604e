// Tool plugins run in the sandbox their declarations earn (plugins/sandbox.ts): a plugin
// whose operations are all read-only data sources gets a read-only filesystem, so one
// that lies about its kind fails its write — in plan mode too, where only data sources
// are offered; a resource plugin writes within its roots and nowhere else; neither can
// read the kernel's /proc entry. Skipped with the reason where bubblewrap cannot run; on
// CI that is a failure (CI installs it).
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const probe = probeSandbox();
if (!probe.ok)
  console.warn(`\n!!! PLUGIN SANDBOX TESTS SKIPPED: bubblewrap cannot run here: ${probe.reason} !!!\n`);

const h = new Harness();
afterAll(() => h.dispose());

it.runIf(process.env["CI"] !== undefined && process.env["CI"] !== "")("CI can run the plugin sandbox", () => {
  expect(probe).toMatchObject({ ok: true });
});

const result = (k: TestKernel, id: string, name: string) => {
  const r = k
    .file(id)
    .toolResults()
    .find((t) => t.toolName === name && t.outcome.case === "result");
  return r?.outcome.case === "result" ? (r.outcome.value.payload as Record<string, unknown>) : undefined;
};

describe.skipIf(!probe.ok)("tool plugins in their sandbox", () => {
  it("a lying data source cannot write, a resource writes only within its roots, neither reads the kernel's environment", async () => {
    const k = await h.kernel({
      sandbox: true,
      headlessAsk: "allow",
      only: [
        { name: "model", fixture: "model" },
        { name: "liar", fixture: "liar" },
        { name: "writer", fixture: "writer" },
      ],
      hcl: `agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["liar.*", "writer.*"]
}
policy "writes" {
  match  = { provider = "writer" }
  action = "allow"
}`,
    });
    const outside = join(k.root, "outside");
    mkdirSync(outside, { recursive: true });
    const pid = process.pid;
    k.script("go", {
      turns: [
        calls(
          tool("a", "liar__peek", { path: join(k.projectDir, "lie.txt"), kernel_pid: pid }),
          tool("b", "writer__put", { path: join(k.projectDir, "honest.txt"), kernel_pid: pid }),
        ),
        calls(tool("c", "writer__put", { path: join(outside, "escape.txt") })),
        reply("done"),
      ],
    });
    const c = k.client();
    const id = await c.create("[go] try");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    // No capability and the system-call filter, root or not (neither plugin runs commands).
    const held = { capEff: "0000000000000000", seccomp: "2" };
    expect(result(k, id, "peek")).toMatchObject({ wrote: false, error: "EROFS", environ: "hidden", ...held });
    expect(existsSync(join(k.projectDir, "lie.txt"))).toBe(false);
    expect(result(k, id, "put")).toMatchObject({ wrote: true, environ: "hidden", ...held });
    expect(existsSync(join(k.projectDir, "honest.txt"))).toBe(true);
    const escaped = k
      .file(id)
      .toolResults()
      .filter((t) => t.toolName === "put")
      .map((t) => (t.outcome.case === "result" ? (t.outcome.value.payload as Record<string, unknown>) : {}));
    expect(escaped[1]).toMatchObject({ wrote: false });
    expect(existsSync(join(outside, "escape.txt"))).toBe(false);

    // Plan mode offers only data sources: the liar is still read-only.
    k.script("plan", {
      turns: [calls(tool("p", "liar__peek", { path: join(k.projectDir, "plan.txt") })), reply("planned")],
    });
    const s = await k.kernel.startSession({ prompt: "[plan] look", planMode: true });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(existsSync(join(k.projectDir, "plan.txt"))).toBe(false);
    await k.close();
  });
});
