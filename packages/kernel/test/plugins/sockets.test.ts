// A sandboxed plugin reaches no socket but its own (docs/security/sockets.md): not another
// plugin's, not the kernel's callbacks for another plugin, not a served kernel's; and a
// tool plugin cannot attach to the kernel as a frontend, even claiming to be one, so it can neither
// create a session nor answer a permission. The prober fixture looks from inside its
// sandbox; a writer plugin runs next to it; a listening socket stands where `agent serve`
// keeps its own. Skipped with the reason where bubblewrap cannot run; on CI that fails.
import { mkdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const probe = probeSandbox();
if (!probe.ok)
  console.warn(`\n!!! PLUGIN SOCKET TESTS SKIPPED: bubblewrap cannot run here: ${probe.reason} !!!\n`);

it.runIf(process.env["CI"] !== undefined && process.env["CI"] !== "")("CI can run the plugin sandbox", () => {
  expect(probe).toMatchObject({ ok: true });
});

const h = new Harness();
let serveLike: Server | undefined;
afterAll(async () => {
  serveLike?.close();
  await h.dispose();
});

const result = (k: TestKernel, id: string, name: string) => {
  const r = k
    .file(id)
    .toolResults()
    .find((t) => t.toolName === name && t.outcome.case === "result");
  return r?.outcome.case === "result" ? (r.outcome.value.payload as Record<string, unknown>) : undefined;
};

/** Where this user's agent keeps sockets (as `agent serve` finds it). */
function runtimeDir(): string {
  const xdg = process.env["XDG_RUNTIME_DIR"];
  return process.env["AGENT_RUNTIME_DIR"] || (xdg ? join(xdg, "agent") : `/tmp/agent-${process.getuid!()}`);
}

describe.skipIf(!probe.ok)("sockets from a plugin sandbox", () => {
  it("a plugin reaches only its own sockets and cannot attach as a frontend", async () => {
    const rt = runtimeDir();
    mkdirSync(rt, { recursive: true, mode: 0o700 });
    const serveSocket = join(rt, `serve-test-${process.pid}.sock`);
    rmSync(serveSocket, { force: true });
    serveLike = createServer((c) => c.destroy());
    await new Promise<void>((resolve) => serveLike!.listen(serveSocket, resolve));

    const k = await h.kernel({
      sandbox: true,
      headlessAsk: "allow",
      only: [
        { name: "model", fixture: "model" },
        { name: "prober", fixture: "prober" },
        { name: "writer", fixture: "writer" },
      ],
      hcl: `agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["prober.*", "writer.*"]
}
policy "writes" {
  match  = { provider = "writer" }
  action = "allow"
}`,
    });
    // This kernel's socket directories (ph-<pid>-…) wherever they are, and the served one's.
    const match = `^(ph-${process.pid}-|serve-test-${process.pid}\\.sock$)`;
    k.script("go", {
      turns: [
        calls(tool("w", "writer__put", { path: join(k.projectDir, "first.txt") })),
        calls(
          tool("p", "prober__probe", {
            dirs: [...new Set([rt, tmpdir(), "/tmp"])],
            match,
            working_directory: k.projectDir,
          }),
        ),
        reply("done"),
      ],
    });
    const c = k.client();
    const id = await c.create("[go] look around");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const r = result(k, id, "probe") as { own: string; found: string[]; connected: string[]; attach: string };
    const why = () =>
      JSON.stringify(k.file(id).toolResults(), (_k, v) => (typeof v === "bigint" ? String(v) : v));
    expect(r, why()).toBeDefined();
    // It sees its own socket (the listing works), and nothing outside its own directory.
    expect(r.found.some((f) => dirname(f) === r.own)).toBe(true);
    expect(r.found.filter((f) => dirname(f) !== r.own)).toEqual([]);
    expect(r.connected.filter((f) => dirname(f) !== r.own)).toEqual([]);
    expect(r.connected).not.toContain(serveSocket);
    // A tool plugin is no frontend, though it says it is one too: no session, no
    // permission answered through it.
    expect(r.attach).toMatch(/^refused: 7 plugin "prober" serves tool too/);
    expect(k.kernel.liveSessions().map((s) => s.sessionId)).toEqual([id]);
    await k.close();
  }, 60_000);
});
