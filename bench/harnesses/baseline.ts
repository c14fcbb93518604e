// Not a harness: a bare Node HTTP client (bench/lib/raw-client.ts). It shows the floor that
// spawning Node and making one streamed request costs on this machine.
import { fileURLToPath } from "node:url";
import type { Harness, RunContext } from "./types.ts";
import { baseEnv } from "./types.ts";

const CLIENT = fileURLToPath(new URL("../lib/raw-client.ts", import.meta.url));

export const baseline: Harness = {
  id: "baseline",
  label: "floor: bare Node client",
  kind: "baseline",
  async prepare() {
    return { ok: true, version: `Node ${process.versions.node}` };
  },
  setupHome() {},
  setupProject() {},
  spec(run: RunContext, env) {
    return {
      command: process.execPath,
      args: [CLIENT, env.fakeUrl, run.prompt],
      env: baseEnv(run.home),
      cwd: run.cwd,
    };
  },
};
