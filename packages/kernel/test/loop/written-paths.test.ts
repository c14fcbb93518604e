// Which files a step's calls can change (loop/turn/written-paths.ts): the checkpoint looks
// at those alone only when every resource call declares them and matches its declaration,
// and no hook can act on the calls; otherwise the whole tree (undefined).
import { create } from "@bufbuild/protobuf";
import { ToolKind, ToolSchemaSchema } from "@pluggableharness/protocol/tool";
import { expect, it } from "vitest";
import type { CallRecord } from "../../src/loop/gate/call.ts";
import { writtenPaths } from "../../src/loop/turn/written-paths.ts";

const call = (
  kind: ToolKind,
  fields: string[],
  args: Record<string, unknown>,
  applied?: Record<string, unknown>,
) =>
  ({
    tool: { tool: { schema: create(ToolSchemaSchema, { name: "t", kind, writtenPathFields: fields }) } },
    args,
    ...(applied ? { result: { appliedArgs: applied } } : {}),
  }) as unknown as CallRecord;

const none = { subscribers: () => [] };

it("names the declared files, and the whole tree wherever a call or a hook could write elsewhere", () => {
  const write = call(ToolKind.RESOURCE, ["path"], { path: "a.txt", content: "x" });
  const read = call(ToolKind.DATA_SOURCE, [], { path: "b.txt" });
  expect(writtenPaths([read, write], none)).toEqual(["a.txt"]);
  expect(writtenPaths([read], none)).toEqual([]);
  // Lists of paths, and a human's corrected arguments after the calls.
  const many = call(ToolKind.RESOURCE, ["paths"], { paths: ["c", "d"] }, { paths: ["e"] });
  expect(writtenPaths([many], none)).toEqual(["c", "d"]);
  expect(writtenPaths([many], none, true)).toEqual(["c", "d", "e"]);
  // A command declares nothing; a call that does not match its declaration is not trusted.
  expect(writtenPaths([write, call(ToolKind.RESOURCE, [], { command: "make" })], none)).toBeUndefined();
  expect(writtenPaths([call(ToolKind.RESOURCE, ["path"], { file: "a.txt" })], none)).toBeUndefined();
  expect(writtenPaths([call(ToolKind.RESOURCE, ["paths"], { paths: ["a", 1] })], none)).toBeUndefined();
  // A hook that can change or stop the calls may write too; an observer changes nothing here.
  const hooks = (mode: string) => ({
    subscribers: (point: string) => (point === "post-tool-call" ? [{ mode }] : []),
  });
  expect(writtenPaths([write], hooks("transform") as never)).toBeUndefined();
  expect(writtenPaths([write], hooks("observe") as never)).toEqual(["a.txt"]);
});
