// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
import { describe, expect, it } from "vitest";
import {
  attributes,
  blocks,
  bodyContent,
  type Expression,
  getAttribute,
  literalString,
  parseExpression,
  parseFile,
} from "../src/index.ts";
import { rangeText } from "./helpers.ts";

const text = `lock_file_version = 1
provider "a" {
  source = "x"
}
provider "b" {}
settings {}
`;

describe("body helpers", () => {
  const { file } = parseFile(text, "q.hcl");

  it("lists attributes and blocks in source order", () => {
    expect(attributes(file.body).map((a) => a.name)).toEqual(["lock_file_version"]);
    expect(blocks(file.body).map((b) => b.type)).toEqual(["provider", "provider", "settings"]);
    expect(blocks(file.body, "provider").map((b) => b.labels[0]!.value)).toEqual(["a", "b"]);
  });

  it("gets an attribute's unevaluated expression with its range", () => {
    const provider = blocks(file.body, "provider")[0]!;
    const source = getAttribute(provider.body, "source");
    expect(source?.expr.kind).toBe("Template");
    expect(rangeText(source!.expr.range)).toBe("3:12:48-3:15:51");
    expect(getAttribute(provider.body, "missing")).toBeUndefined();
  });
});

describe("literalString", () => {
  const expr = (t: string): Expression => parseExpression(t, "e.hcl").expr!;

  it("accepts only quoted strings made of literal text", () => {
    expect(literalString(expr('"ANTHROPIC_API_KEY"'))).toBe("ANTHROPIC_API_KEY");
    expect(literalString(expr('""'))).toBe("");
    expect(literalString(expr('"a$${b}"'))).toBe("a${b}");
    expect(literalString(expr('"${x}"'))).toBeUndefined();
    expect(literalString(expr('"a${x}"'))).toBeUndefined();
    expect(literalString(expr('"%{ if true }a%{ endif }"'))).toBeUndefined();
    expect(literalString(expr('("a")'))).toBeUndefined();
    expect(literalString(expr("<<EOT\na\nEOT\n"))).toBeUndefined();
    expect(literalString(expr("a"))).toBeUndefined();
  });
});

describe("bodyContent", () => {
  const schema = {
    attributes: [{ name: "lock_file_version", required: true }, { name: "note" }],
    blocks: [{ type: "provider", labels: ["name"] }, { type: "settings" }],
  };

  it("returns declared attributes and blocks", () => {
    const { file } = parseFile(text, "q.hcl");
    const content = bodyContent(file.body, schema);
    expect(content.diagnostics).toEqual([]);
    expect([...content.attributes.keys()]).toEqual(["lock_file_version"]);
    expect(content.blocks.map((b) => b.type)).toEqual(["provider", "provider", "settings"]);
  });

  it("reports unknown names, wrong label counts and missing required attributes", () => {
    const bad = `provider {}
provider "a" "b" {}
settings "x" {}
sttings {}
lock_file_versoin = 1
settings = 1
unknown {}
`;
    const { file } = parseFile(bad, "bad.hcl");
    const { diagnostics, blocks: found } = bodyContent(file.body, schema);
    expect(found).toEqual([]);
    expect(diagnostics.map((d) => [d.code, d.summary, rangeText(d.subject)])).toEqual([
      ["missing-block-label", "Missing name for provider", "1:10:9-1:11:10"],
      ["extraneous-block-label", "Extraneous label for provider", "2:14:25-2:17:28"],
      ["extraneous-block-label", "Extraneous label for settings", "3:10:41-3:13:44"],
      ["unsupported-block-type", "Unsupported block type", "4:1:48-4:8:55"],
      ["unsupported-argument", "Unsupported argument", "5:1:59-5:18:76"],
      ["unsupported-argument", "Unsupported argument", "6:1:81-6:9:89"],
      ["unsupported-block-type", "Unsupported block type", "7:1:94-7:8:101"],
      ["missing-argument", "Missing required argument", "1:1:0-1:1:0"],
    ]);
    expect(diagnostics[3]!.detail).toContain('Did you mean "settings"?');
    expect(diagnostics[4]!.detail).toContain('Did you mean "lock_file_version"?');
    expect(diagnostics[5]!.detail).toContain("is a block type");
    expect(diagnostics[6]!.detail).not.toContain("Did you mean");
  });

  it("points a missing attribute of a block at the block's opening brace", () => {
    const { file } = parseFile('x "n" {\n}\n', "m.hcl");
    const block = blocks(file.body)[0]!;
    const { diagnostics } = bodyContent(block.body, { attributes: [{ name: "id", required: true }] });
    expect(diagnostics.map((d) => rangeText(d.subject))).toEqual(["1:7:6-1:7:6"]);
  });
});
