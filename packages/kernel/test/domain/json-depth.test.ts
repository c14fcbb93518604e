import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ToolCallSchema } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  argumentDepthProblem,
  checkArguments,
  jsonDepth,
  MAX_ARGUMENT_DEPTH,
} from "../../src/domain/index.ts";

function nested(depth: number): unknown {
  let v: unknown = {};
  for (let i = 1; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

describe("argument nesting depth", () => {
  it("counts objects and lists, scalars are 0", () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [1, { b: 2 }] })).toBe(3);
    expect(jsonDepth(nested(40))).toBe(40);
  });

  it("measures a value nested a million levels deep without recursion", () => {
    expect(jsonDepth(nested(1_000_000), MAX_ARGUMENT_DEPTH)).toBe(MAX_ARGUMENT_DEPTH + 1);
  });

  it("accepts what the protobuf decoder reads back, inside every envelope the kernel wraps it in", () => {
    const input = nested(MAX_ARGUMENT_DEPTH) as Record<string, never>;
    expect(argumentDepthProblem(input)).toBeUndefined();
    const call = create(ToolCallSchema, { id: "c", toolName: "t", arguments: input });
    // The decoder's limit is 100 levels; the deepest envelope adds six.
    expect(() =>
      fromBinary(ToolCallSchema, toBinary(ToolCallSchema, call), { recursionLimit: 94 }),
    ).not.toThrow();
    expect(argumentDepthProblem(nested(MAX_ARGUMENT_DEPTH + 1))).toMatch(/nested more than 32 levels/);
  });

  it("checkArguments refuses deep input before the schema is consulted", () => {
    const r = checkArguments({ type: "object" }, nested(50));
    expect(r.ok).toBe(false);
    expect(r.errors[0]).toMatch(/nested more than 32 levels/);
    expect(checkArguments({ type: "object" }, { a: 1 }).ok).toBe(true);
  });
});
