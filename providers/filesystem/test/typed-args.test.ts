// Tool arguments typed from the declared input schema: the type a handler reads is the one
// the schema the model sees (and checkValue enforces) describes. The type assertions are
// checked by `tsc -p tsconfig.json` (the repository's type check covers test files); the
// runtime assertions pin that the typed schema is still the plain schema on the wire.
import { checkValue, defineTool, type Infer, s, toWireSchema } from "@pluggableharness/tool-kit";
import { describe, expect, expectTypeOf, it } from "vitest";
import { readFileTool } from "../src/read.ts";

const input = s.object(
  {
    path: s.string("A file."),
    mode: s.string("How.", ["replace", "insert"]),
    lines: s.array(s.integer()),
    flags: s.object({ dry: s.boolean() }, ["dry"]),
  },
  ["path", "mode"],
);

describe("defineTool", () => {
  it("types handler arguments from the input schema", () => {
    expectTypeOf<Infer<typeof input>>().toEqualTypeOf<{
      path: string;
      mode: "replace" | "insert";
      lines?: number[];
      flags?: { dry: boolean };
    }>();
    const tool = defineTool({
      name: "t",
      kind: "data_source",
      risk: "read_only",
      description: "d",
      input,
      output: s.object({}),
      streaming: false,
      concurrency: { safe: true },
      idempotent: true,
      invoke(args) {
        expectTypeOf(args.mode).toEqualTypeOf<"replace" | "insert">();
        // @ts-expect-error a property the schema does not declare
        args.missing;
        return Promise.resolve({ path: args.path });
      },
    });
    expect(tool.input).toBe(input);
    // The first-party user: read_file's handler reads what its schema declares.
    expectTypeOf<Parameters<typeof readFileTool.invoke>[0]>().toEqualTypeOf<{
      path: string;
      offset?: number;
      limit?: number;
    }>();
  });

  it("keeps the schema the model sees and the run-time check unchanged", () => {
    expect(toWireSchema(input).required).toEqual(["path", "mode"]);
    expect(checkValue(input, { path: "a", mode: "delete" })).toEqual([
      'arguments.mode: must be one of "replace", "insert"',
    ]);
    expect(checkValue(readFileTool.input, { path: "a", offset: 2 })).toEqual([]);
  });
});
