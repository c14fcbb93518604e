import { create } from "@bufbuild/protobuf";
import { ModelTargetSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { tokenBudget } from "../../src/loop/turn/context-assembly.ts";
import { memoryBudget } from "../../src/loop/turn/memory-recall.ts";
import type { LoadedProvider } from "../../src/plugins/providers.ts";

const target = (ceiling: bigint) => create(ModelTargetSchema, { effectiveCeiling: ceiling });
const provider = (config: Record<string, unknown>, declared: bigint) =>
  ({
    config,
    context: { defaultTokenBudget: declared },
    memory: { defaultTokenBudget: declared },
  }) as unknown as LoadedProvider;

describe("a context or memory provider's token budget", () => {
  for (const [name, budget] of [
    ["context", tokenBudget],
    ["memory", memoryBudget],
  ] as const) {
    it(`${name}: agent.hcl, else the declared default, capped by the ceiling`, () => {
      expect(budget(provider({ token_budget: 500 }, 2_000n), target(10_000n))).toBe(500);
      expect(budget(provider({}, 2_000n), target(10_000n))).toBe(2_000);
      expect(budget(provider({ token_budget: 0 }, 2_000n), target(10_000n))).toBe(2_000);
      expect(budget(provider({ token_budget: 50_000 }, 0n), target(10_000n))).toBe(10_000);
      expect(budget(provider({}, 0n), target(10_000n))).toBe(10_000);
      expect(budget(provider({}, 3_000n), target(0n))).toBe(3_000);
    });
  }
});
