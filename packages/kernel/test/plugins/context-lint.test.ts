// The stability-order lint: static after dynamic warns once per static provider, naming the
// first dynamic one; static-first orders and memory-only lists are quiet.
import { Stability } from "@pluggableharness/protocol/content";
import { expect, it } from "vitest";
import { stabilityOrderWarnings } from "../../src/plugins/context-lint.ts";

const s = (name: string) => ({ name, stability: Stability.STATIC });
const d = (name: string) => ({ name, stability: Stability.DYNAMIC });
const memory = (name: string) => ({ name, stability: undefined });

it("warns for each static provider declared after a dynamic one", () => {
  expect(
    stabilityOrderWarnings([s("a"), d("b"), s("c"), memory("m"), s("e")]).map((w) => w.split(":")[0]),
  ).toEqual([
    'context provider "c" (static) is declared after "b" (dynamic)',
    'context provider "e" (static) is declared after "b" (dynamic)',
  ]);
  expect(stabilityOrderWarnings([memory("m"), s("a")])).toHaveLength(1);
});

it("says nothing when the static providers come first", () => {
  expect(stabilityOrderWarnings([s("a"), s("b"), d("c"), memory("m")])).toEqual([]);
  expect(stabilityOrderWarnings([])).toEqual([]);
});
