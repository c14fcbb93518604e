// How a ToolResult payload reads to the model (docs/decisions/tools.md, "Tool results as text").
import { create, fromJson } from "@bufbuild/protobuf";
import { GetSchemaResponseSchema, ToolSchemaSchema } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  EMPTY_RESULT_TEXT,
  imageFallbackText,
  modelTextOf,
  resultImages,
} from "../../src/domain/tool-result-text.ts";
import { ToolSchemaRule, validateToolSchemas } from "../../src/domain/tool-schema.ts";

const schema = (field: string, omit: string[] = []) =>
  create(ToolSchemaSchema, { modelTextField: field, modelOmittedFields: omit });

describe("modelTextOf", () => {
  const file = 'const a = "x";\n\tb();\n';
  const read = { path: "a.ts", content: file, start_line: 1, end_line: 2, truncated: false, notice: "" };

  it("reads the designated text field verbatim, after the rest as one line of compact JSON", () => {
    const out = modelTextOf(read, schema("content"));
    expect(out).toBe(`{"path":"a.ts","start_line":1,"end_line":2,"truncated":false,"notice":""}\n${file}`);
    // Real newlines and quotes, not JSON escapes.
    expect(out).not.toContain("\\n");
    expect(out).not.toContain('\\"');
  });

  it("leaves out fields that restate the text; without a designation the payload is compact JSON", () => {
    const grep = {
      mode: "content",
      matches: [{ path: "a", line: 1, text: "x" }],
      total_matches: 1,
      output: "a:1:x",
    };
    expect(modelTextOf(grep, schema("output", ["matches"]))).toBe(
      '{"mode":"content","total_matches":1}\na:1:x',
    );
    expect(modelTextOf(read, undefined)).toBe(JSON.stringify(read));
    expect(modelTextOf(read, schema(""))).toBe(JSON.stringify(read));
  });

  it("falls back to compact JSON when the field is absent or not a string, and never returns empty", () => {
    expect(modelTextOf({ content: 7 }, schema("content"))).toBe('{"content":7}');
    expect(modelTextOf({ output: "" }, schema("output"))).toBe(EMPTY_RESULT_TEXT);
    expect(modelTextOf({}, undefined)).toBe(EMPTY_RESULT_TEXT);
    expect(modelTextOf({ answer: "yes" }, schema("answer"))).toBe("yes");
  });
});

describe("model_text_field at GetSchema time", () => {
  const response = (field: string, omit: string[] = []) =>
    fromJson(GetSchemaResponseSchema, {
      tools: [
        {
          name: "op",
          kind: "TOOL_KIND_DATA_SOURCE",
          risk: "RISK_CLASS_READ_ONLY",
          description: "an operation",
          inputSchema: { type: "SCHEMA_TYPE_OBJECT" },
          outputSchema: {
            type: "SCHEMA_TYPE_OBJECT",
            properties: [
              { name: "text", schema: { type: "SCHEMA_TYPE_STRING" } },
              { name: "n", schema: { type: "SCHEMA_TYPE_INTEGER" } },
            ],
          },
          concurrency: { safe: true },
          modelTextField: field,
          modelOmittedFields: omit,
        },
      ],
    });
  const rules = (field: string, omit?: string[]) => {
    try {
      validateToolSchemas("p", response(field, omit));
      return [];
    } catch (err) {
      return (err as { violations: { rule: string }[] }).violations.map((v) => v.rule);
    }
  };

  it("accepts a string output property, and rejects anything else", () => {
    expect(rules("text", ["n"])).toEqual([]);
    expect(rules("")).toEqual([]);
    expect(rules("n")).toEqual([ToolSchemaRule.modelTextFieldIsString]);
    expect(rules("missing")).toEqual([ToolSchemaRule.modelTextFieldIsString]);
    expect(rules("text", ["text"])).toEqual([ToolSchemaRule.modelOmittedFieldsInOutput]);
    expect(rules("text", ["nope"])).toEqual([ToolSchemaRule.modelOmittedFieldsInOutput]);
    expect(rules("", ["n"])).toEqual([ToolSchemaRule.modelOmittedFieldsInOutput]);
  });
});

describe("model_image_field", () => {
  const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString("base64");
  const withImages = (field: string) =>
    fromJson(GetSchemaResponseSchema, {
      tools: [
        {
          name: "op",
          kind: "TOOL_KIND_DATA_SOURCE",
          risk: "RISK_CLASS_READ_ONLY",
          description: "an operation",
          inputSchema: { type: "SCHEMA_TYPE_OBJECT" },
          outputSchema: {
            type: "SCHEMA_TYPE_OBJECT",
            properties: [
              { name: "text", schema: { type: "SCHEMA_TYPE_STRING" } },
              { name: "images", schema: { type: "SCHEMA_TYPE_ARRAY" } },
            ],
          },
          concurrency: { safe: true },
          modelTextField: "text",
          modelImageField: field,
        },
      ],
    });
  const rules = (field: string) => {
    try {
      validateToolSchemas("p", withImages(field));
      return [];
    } catch (err) {
      return (err as { violations: { rule: string }[] }).violations.map((v) => v.rule);
    }
  };

  it("must name an array output property other than the text field", () => {
    expect(rules("images")).toEqual([]);
    expect(rules("text")).toEqual([ToolSchemaRule.modelImageFieldIsArray]);
    expect(rules("missing")).toEqual([ToolSchemaRule.modelImageFieldIsArray]);
  });

  it("is never part of the text; well-formed items become images, malformed ones are counted", () => {
    const s = create(ToolSchemaSchema, { modelTextField: "text", modelImageField: "images" });
    const payload = {
      text: "PNG image a.png",
      size: 8,
      images: [
        { media_type: "image/png", data: PNG },
        { media_type: "image/bmp", data: PNG },
        { media_type: "image/png", data: "not base64!" },
      ],
    };
    expect(modelTextOf(payload, s)).toBe('{"size":8}\nPNG image a.png');
    const { images, malformed } = resultImages(payload, s);
    expect(images.map((i) => [i.mediaType, Buffer.from(i.data).toString("base64")])).toEqual([
      ["image/png", PNG],
    ]);
    expect(malformed).toBe(2);
    expect(imageFallbackText(images, "text-only-1")).toBe(
      "[an image (image/png, 8 bytes) not shown: text-only-1 does not take images]",
    );
  });
});
