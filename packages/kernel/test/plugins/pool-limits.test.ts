// Per-plugin heap limits reach the worker thread: what a provider asks for at acquire time
// (a model provider's larger young generation) is laid over the pool's worker options.
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { PluginPool } from "../../src/index.ts";
import type { PoolOwner } from "../../src/plugins/pool.ts";

const TOOL_PLUGIN = fileURLToPath(new URL("../../../runtime/test/fixtures/tool-plugin.ts", import.meta.url));

const owner: PoolOwner = {
  callbacks: () => ({}) as never,
  attach: () => (() => {}) as never,
  pluginLog: () => {},
  pluginCrashed: () => {},
  pluginLaunched: async () => {},
};

const pool = new PluginPool({
  hostOptions: { launchTimeoutMs: 20_000 },
  workerOptions: { resourceLimits: { maxOldGenerationSizeMb: 512 } },
});
afterAll(() => pool.shutdown());

describe("worker limits per plugin", () => {
  it("lays the acquire-time limits over the pool's, and leaves other workers on the pool's", async () => {
    const big = pool.acquire("big", TOOL_PLUGIN, owner, {
      isolation: "worker",
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    const plain = pool.acquire("plain", TOOL_PLUGIN, owner, { isolation: "worker" });
    await Promise.all([big.describe(), plain.describe()]);
    expect(big.lastSpawn?.thread?.resourceLimits).toMatchObject({
      maxYoungGenerationSizeMb: 8,
      maxOldGenerationSizeMb: 512,
    });
    expect(plain.lastSpawn?.thread?.resourceLimits).toMatchObject({ maxOldGenerationSizeMb: 512 });
    expect(plain.lastSpawn?.thread?.resourceLimits?.maxYoungGenerationSizeMb).not.toBe(8);
  });
});
