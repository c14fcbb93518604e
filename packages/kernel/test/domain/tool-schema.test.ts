import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { SchemaSchema, SchemaType } from "@pluggableharness/protocol/schema";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { ToolSchemaError } from "../../src/domain/errors.ts";
import { toJsonSchema, translateSchema } from "../../src/domain/json-schema.ts";
import { ToolSchemaRule, validateToolSchemas } from "../../src/domain/tool-schema.ts";
import { interactive, objectSchema, resource, schemaResponse, tool } from "./fixtures.ts";

function rejection(fn: () => unknown): ToolSchemaError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ToolSchemaError) return e;
    throw e;
  }
  throw new Error("expected a ToolSchemaError");
}

/** The rules a response breaks; every violation must also say what is wrong in words. */
function rulesOf(fn: () => unknown): string[] {
  const violations = rejection(fn).violations;
  // "<provider>.<operation>: <what is wrong>": the part after the subject must not be empty.
  for (const v of violations) expect(v.message, `message of ${v.rule}`).toMatch(/: \S/);
  return violations.map((v) => v.rule);
}

describe("ToolSchema validation at GetSchema time", () => {
  it("accepts a well-formed response and keeps declaration order", () => {
    const set = validateToolSchemas("fs", schemaResponse([tool(), resource(), interactive()]));
    expect([...set.tools.keys()]).toEqual(["read_file", "write_file", "ask_user"]);
    expect(set.warnings).toEqual([]);
  });

  it("rejection names provider, operation and rule, and rejects the whole response", () => {
    const err = rejection(() =>
      validateToolSchemas("fs", schemaResponse([tool(), resource({ risk: RiskClass.READ_ONLY })])),
    );
    expect(err.category).toBe("invalid_tool_schema");
    expect(err.provider).toBe("fs");
    expect(err.violations).toHaveLength(1);
    expect(err.violations[0]).toMatchObject({
      provider: "fs",
      subject: "write_file",
      rule: "resource-risk-not-read-only",
    });
    expect(err.message).toContain("fs.write_file");
    expect(err.message).toContain("[rule resource-risk-not-read-only]");
  });

  it("every violation of a response is reported at once", () => {
    const rules = rulesOf(() =>
      validateToolSchemas(
        "fs",
        schemaResponse([tool({ kind: ToolKind.UNSPECIFIED, risk: RiskClass.UNSPECIFIED, description: "" })]),
      ),
    );
    expect(rules).toEqual(
      expect.arrayContaining(["kind-specified", "risk-specified", "description-required"]),
    );
  });

  it("unspecified kind is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ kind: ToolKind.UNSPECIFIED })]))),
    ).toContain(ToolSchemaRule.kindSpecified);
  });

  it("unspecified risk is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ risk: RiskClass.UNSPECIFIED })]))),
    ).toContain(ToolSchemaRule.riskSpecified);
  });

  it("a resource with read_only risk is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([resource({ risk: RiskClass.READ_ONLY })]))),
    ).toEqual([ToolSchemaRule.resourceRiskNotReadOnly]);
  });

  it("a resource may declare low, moderate, high or critical risk", () => {
    for (const risk of [RiskClass.LOW, RiskClass.MODERATE, RiskClass.HIGH, RiskClass.CRITICAL]) {
      expect(() => validateToolSchemas("fs", schemaResponse([resource({ risk })]))).not.toThrow();
    }
  });

  it("a data_source with any risk but read_only is rejected", () => {
    for (const risk of [RiskClass.LOW, RiskClass.MODERATE, RiskClass.HIGH, RiskClass.CRITICAL]) {
      expect(rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ risk })])))).toEqual([
        ToolSchemaRule.readOnlyRiskForNonResource,
      ]);
    }
  });

  it("an interactive operation with any risk but read_only is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("user", schemaResponse([interactive({ risk: RiskClass.LOW })]))),
    ).toEqual([ToolSchemaRule.readOnlyRiskForNonResource]);
  });

  it("terminates_turn on a data_source is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ terminatesTurn: true })]))),
    ).toEqual([ToolSchemaRule.terminatesTurnResourceOnly]);
  });

  it("terminates_turn on an interactive operation is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("u", schemaResponse([interactive({ terminatesTurn: true })]))),
    ).toEqual([ToolSchemaRule.terminatesTurnResourceOnly]);
  });

  it("terminates_turn on a resource is accepted", () => {
    const set = validateToolSchemas(
      "done",
      schemaResponse([resource({ name: "finish", terminatesTurn: true })]),
    );
    expect(set.tools.get("finish")!.schema.terminatesTurn).toBe(true);
  });

  it("duplicate operation names are rejected", () => {
    expect(rulesOf(() => validateToolSchemas("fs", schemaResponse([tool(), tool()])))).toEqual([
      ToolSchemaRule.nameUnique,
    ]);
  });

  it("an operation without a description is rejected", () => {
    expect(rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ description: " " })])))).toEqual([
      ToolSchemaRule.descriptionRequired,
    ]);
  });

  it("an operation without a name is rejected", () => {
    expect(rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ name: "" })])))).toEqual([
      ToolSchemaRule.nameRequired,
    ]);
  });

  it("missing input_schema or output_schema is rejected", () => {
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ inputSchema: undefined })]))),
    ).toEqual([ToolSchemaRule.inputSchemaRequired]);
    expect(
      rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ outputSchema: undefined })]))),
    ).toEqual([ToolSchemaRule.outputSchemaRequired]);
  });

  it("input and output schemas must describe objects", () => {
    const s = create(SchemaSchema, { type: SchemaType.STRING });
    expect(rulesOf(() => validateToolSchemas("fs", schemaResponse([tool({ outputSchema: s })])))).toEqual([
      ToolSchemaRule.schemaIsObject,
    ]);
  });

  it("key_fields naming a field absent from input_schema is rejected", () => {
    const err = rejection(() =>
      validateToolSchemas(
        "fs",
        schemaResponse([resource({ concurrency: { safe: true, keyFields: ["file"] } })]),
      ),
    );
    expect(err.violations.map((v) => v.rule)).toEqual([ToolSchemaRule.keyFieldsInInputSchema]);
    expect(err.message).toContain('"file"');
  });

  it("key_fields under safe: false is ignored with a warning", () => {
    const set = validateToolSchemas(
      "fs",
      schemaResponse([resource({ concurrency: { safe: false, keyFields: ["path"] } })]),
    );
    expect(set.warnings.map((w) => w.rule)).toEqual([ToolSchemaRule.keyFieldsNeedSafe]);
    expect(set.tools.get("write_file")!.concurrency).toEqual({ kind: "provider_lock" });
  });

  it("a slash command whose tool_name is not an operation of the provider is rejected", () => {
    const err = rejection(() =>
      validateToolSchemas(
        "fs",
        schemaResponse([tool()], {
          slashCommands: [
            { name: "cat", description: "", dispatch: Dispatch.DIRECT_INVOKE, toolName: "cat_file" },
          ],
        }),
      ),
    );
    expect(err.violations).toEqual([
      expect.objectContaining({ subject: "/cat", rule: ToolSchemaRule.slashCommandToolExists }),
    ]);
  });

  it("a slash command naming one of the provider's operations is accepted", () => {
    const set = validateToolSchemas(
      "fs",
      schemaResponse([tool()], {
        slashCommands: [
          { name: "cat", description: "", dispatch: Dispatch.DIRECT_INVOKE, toolName: "read_file" },
        ],
      }),
    );
    expect(set.slashCommands).toHaveLength(1);
  });

  it("a direct-invoke slash command without tool_name is rejected", () => {
    expect(
      rulesOf(() =>
        validateToolSchemas(
          "fs",
          schemaResponse([tool()], { slashCommands: [{ name: "x", dispatch: Dispatch.DIRECT_INVOKE }] }),
        ),
      ),
    ).toEqual([ToolSchemaRule.slashCommandDirectInvokeNeedsTool]);
  });

  it("ConcurrencySpec on an interactive operation is ignored with a warning", () => {
    const set = validateToolSchemas("u", schemaResponse([interactive({ concurrency: { safe: true } })]));
    const op = set.tools.get("ask_user")!;
    expect(op.concurrency).toEqual({ kind: "interactive" });
    expect(op.schema.concurrency).toBeUndefined();
    expect(set.warnings.map((w) => w.rule)).toEqual([ToolSchemaRule.concurrencyOnInteractive]);
  });

  it("absent ConcurrencySpec is treated as safe: false", () => {
    const set = validateToolSchemas("fs", schemaResponse([resource({ concurrency: undefined })]));
    expect(set.tools.get("write_file")!.concurrency).toEqual({ kind: "provider_lock" });
    expect(set.warnings.map((w) => w.rule)).toEqual([ToolSchemaRule.concurrencyMissing]);
  });

  it("safe: true without key_fields gives every call its own key", () => {
    const set = validateToolSchemas(
      "web",
      schemaResponse([tool({ name: "web_search", concurrency: { safe: true } })]),
    );
    expect(set.tools.get("web_search")!.concurrency).toEqual({ kind: "per_call" });
  });

  it("default_timeout must be positive", () => {
    expect(
      rulesOf(() =>
        validateToolSchemas("fs", schemaResponse([tool({ defaultTimeout: create(DurationSchema, {}) })])),
      ),
    ).toEqual([ToolSchemaRule.defaultTimeoutPositive]);
  });
});

describe("the common JSON-Schema subset", () => {
  function withExtra(extra: Record<string, unknown>) {
    const s = objectSchema({ path: SchemaType.STRING });
    s.properties[0]!.schema!.extraKeywords = extra as never;
    return s;
  }

  it("schemas using a structural keyword outside the subset are rejected", () => {
    for (const keyword of ["oneOf", "anyOf", "allOf", "$ref", "not", "patternProperties"]) {
      const err = rejection(() =>
        validateToolSchemas("fs", schemaResponse([tool({ inputSchema: withExtra({ [keyword]: [] }) })])),
      );
      expect(err.violations[0]!.rule).toBe(ToolSchemaRule.jsonSchemaSubset);
      expect(err.message).toContain(keyword);
      expect(err.message).toContain("input_schema/properties/path");
    }
  });

  it("a schema-valued additionalProperties is rejected, a boolean one dropped with a warning", () => {
    expect(
      rulesOf(() =>
        validateToolSchemas(
          "fs",
          schemaResponse([tool({ inputSchema: withExtra({ additionalProperties: { type: "string" } }) })]),
        ),
      ),
    ).toEqual([ToolSchemaRule.jsonSchemaSubset]);
    const set = validateToolSchemas(
      "fs",
      schemaResponse([tool({ inputSchema: withExtra({ additionalProperties: false }) })]),
    );
    expect(set.warnings.map((w) => w.rule)).toEqual([ToolSchemaRule.jsonSchemaSubset]);
  });

  it("non-structural keywords outside the subset are accepted with a warning and dropped", () => {
    const set = validateToolSchemas(
      "fs",
      schemaResponse([tool({ inputSchema: withExtra({ pattern: "^/", format: "uri" }) })]),
    );
    expect(set.warnings).toHaveLength(2);
    expect(set.warnings[0]!.message).toContain("pattern");
    const translated = set.tools.get("read_file")!.schema.inputSchema!;
    expect(translated.properties[0]!.schema!.extraKeywords).toBeUndefined();
    expect(set.tools.get("read_file")!.inputJsonSchema).toEqual({
      type: "object",
      properties: { path: { type: "string" } },
    });
  });

  it("const is translated into a one-value enum", () => {
    const t = translateSchema(withExtra({ const: "main.go" }));
    expect(t.errors).toEqual([]);
    expect(toJsonSchema(t.schema)).toEqual({
      type: "object",
      properties: { path: { type: "string", enum: ["main.go"] } },
    });
  });

  it("duplicate property names and undeclared required names are rejected", () => {
    const dup = objectSchema({ path: SchemaType.STRING });
    dup.properties.push(dup.properties[0]!);
    expect(translateSchema(dup).errors.map((e) => e.keyword)).toEqual(["properties"]);
    expect(translateSchema(objectSchema({}, ["path"])).errors.map((e) => e.keyword)).toEqual(["required"]);
  });

  it("the subset converts to JSON Schema with every supported keyword", () => {
    const s = create(SchemaSchema, {
      type: SchemaType.OBJECT,
      description: "args",
      properties: [
        {
          name: "mode",
          schema: { type: SchemaType.STRING, enum: [{ kind: { case: "stringValue", value: "a" } }] },
        },
        { name: "paths", schema: { type: SchemaType.ARRAY, items: { type: SchemaType.STRING } } },
        { name: "n", schema: { type: SchemaType.INTEGER } },
      ],
      required: ["mode"],
    });
    expect(toJsonSchema(s)).toEqual({
      type: "object",
      description: "args",
      properties: {
        mode: { type: "string", enum: ["a"] },
        paths: { type: "array", items: { type: "string" } },
        n: { type: "integer" },
      },
      required: ["mode"],
    });
  });
});
