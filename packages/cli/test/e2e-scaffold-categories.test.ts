// `agent plugin new --category X` for every category `agent conform` checks: each
// scaffold's own `npm test` (build with `agent plugin build`, then `agent conform` on
// the build) passes on this Node, as an author would run it. Scaffolds have no npm
// dependencies, so there is nothing to install; two run at a time to stay cheap.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AGENT_BIN, agent, type Sandbox, sandbox } from "./helpers.ts";

const CATEGORIES = ["tool", "model", "context", "memory", "hook", "frontend", "widget", "slash-command"];

let sb: Sandbox;
beforeAll(() => {
  sb = sandbox();
});
afterAll(() => sb?.cleanup());

function npmTest(cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("npm", ["test"], {
      cwd,
      env: { ...sb.env, AGENT_BIN },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 150_000,
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ code, out }));
  });
}

it("scaffolds a plugin of every category whose own npm test passes", async () => {
  const work = sb.dir("plugins");
  const results: Record<string, { code: number | null; out: string }> = {};
  const queue = [...CATEGORIES];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const name = `provider-${c}-demo`;
      const made = await agent(["plugin", "new", name, "--category", c], { cwd: work, env: sb.env });
      if (made.code !== 0) {
        results[c] = { code: made.code, out: made.stderr };
        continue;
      }
      expect(made.stdout).toContain(`Created ${c} plugin ${name}`);
      results[c] = await npmTest(join(work, name));
    }
  };
  await Promise.all([worker(), worker()]);
  for (const c of CATEGORIES) expect({ category: c, ...results[c] }).toMatchObject({ category: c, code: 0 });
  // Each scaffold's test asserts its category's checks ran; node --test reports them passed.
  for (const c of CATEGORIES) expect(results[c]!.out).toMatch(/(#|ℹ) pass 1\n(#|ℹ) fail 0/);
}, 240_000);

it("refuses a category it cannot scaffold, naming the ones it can", async () => {
  const r = await agent(["plugin", "new", "provider-x", "--category", "vendor"], {
    cwd: sb.dir("x"),
    env: sb.env,
  });
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/context.*memory.*hook.*frontend.*widget.*slash-command/);
});
