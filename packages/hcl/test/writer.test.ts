// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Body,
  evaluate,
  parseExpression,
  parseFile,
  type Value,
  type WriterBlock,
  type WriterDocument,
  writeHcl,
  writeValue,
} from "../src/index.ts";

const lockDoc: WriterDocument = {
  header: ["This file is maintained automatically.", "", "Do not edit it by hand."],
  attributes: { lock_file_version: 1 },
  blocks: [
    {
      type: "provider",
      labels: ["files"],
      attributes: {
        source: "github.com/example/provider-files",
        version: "0.9.1",
        resolved_at: "2026-01-02T03:04:05Z",
        checksums: { linux_amd64: "sha256:aa", darwin_arm64: "sha256:bb" },
      },
    },
    {
      type: "provider",
      labels: ["claude"],
      attributes: { source: "github.com/example/provider-claude", version: "1.4.2" },
    },
  ],
};

describe("writeHcl", () => {
  it("writes the lock file layout: header, aligned =, blank line before blocks", () => {
    expect(writeHcl(lockDoc)).toBe(
      [
        "# This file is maintained automatically.",
        "#",
        "# Do not edit it by hand.",
        "",
        "lock_file_version = 1",
        "",
        'provider "files" {',
        '  source      = "github.com/example/provider-files"',
        '  version     = "0.9.1"',
        '  resolved_at = "2026-01-02T03:04:05Z"',
        "  checksums = {",
        '    "linux_amd64"  = "sha256:aa"',
        '    "darwin_arm64" = "sha256:bb"',
        "  }",
        "}",
        "",
        'provider "claude" {',
        '  source  = "github.com/example/provider-claude"',
        '  version = "1.4.2"',
        "}",
        "",
      ].join("\n"),
    );
  });

  it("sorts attributes, object keys and blocks when asked", () => {
    const text = writeHcl(lockDoc, { sortAttributes: true, sortObjectKeys: true, sortBlocks: true });
    const lines = text.split("\n");
    expect(lines.indexOf('provider "claude" {')).toBeLessThan(lines.indexOf('provider "files" {'));
    const files = lines.slice(lines.indexOf('provider "files" {'));
    expect(files.slice(1, 9)).toEqual([
      "  checksums = {",
      '    "darwin_arm64" = "sha256:bb"',
      '    "linux_amd64"  = "sha256:aa"',
      "  }",
      '  resolved_at = "2026-01-02T03:04:05Z"',
      '  source      = "github.com/example/provider-files"',
      '  version     = "0.9.1"',
      "}",
    ]);
  });

  it("writes nested blocks, empty blocks, lists and nested collections", () => {
    const doc: WriterDocument = {
      blocks: [
        {
          type: "outer",
          attributes: { list: [1, "a", true, null], nested: [[1], { k: "v" }], none: [], empty: {} },
          blocks: [{ type: "inner", labels: ["x", "y"] }],
        },
      ],
    };
    expect(writeHcl(doc)).toBe(
      [
        "outer {",
        '  list = [1, "a", true, null]',
        "  nested = [",
        "    [1],",
        "    {",
        '      "k" = "v"',
        "    },",
        "  ]",
        "  none  = []",
        "  empty = {}",
        "",
        '  inner "x" "y" {}',
        "}",
        "",
      ].join("\n"),
    );
  });

  it("escapes strings so that they read back unchanged", () => {
    expect(writeValue('a"b\\c\nd\re\tf\u0001g\u007f')).toBe('"a\\"b\\\\c\\nd\\re\\tf\\u0001g\\u007F"');
    expect(writeValue("${x} %{y} $${z} %%{w}")).toBe('"$${x} %%{y} $$${z} %%%{w}"');
    expect(writeValue("e\u0301")).toBe('"\u00e9"');
    expect(writeValue(-0)).toBe("-0");
    expect(writeValue(1e21)).toBe("1e+21");
  });

  it("writes the empty document as the empty string", () => {
    expect(writeHcl({})).toBe("");
  });

  it("throws TypeError on input it cannot write", () => {
    expect(() => writeHcl({ attributes: { "not valid": 1 } })).toThrow(TypeError);
    expect(() => writeHcl({ blocks: [{ type: "1x" }] })).toThrow(TypeError);
    expect(() => writeValue(Number.NaN)).toThrow(TypeError);
    expect(() => writeValue(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => writeValue("\uD800")).toThrow(TypeError);
    expect(() => writeValue(undefined as unknown as Value)).toThrow(TypeError);
    expect(() => writeHcl({ header: ["two\nlines"] })).toThrow(TypeError);
  });
});

// ---- round trip ---------------------------------------------------------------

/** Reads a written body back into the writer's own shape. */
function readBack(body: Body): { attributes: Record<string, Value>; blocks: WriterBlock[] } {
  const attributes: Record<string, Value> = {};
  const blocks: WriterBlock[] = [];
  for (const item of body.items) {
    if (item.kind === "Attribute") {
      const r = evaluate(item.expr);
      expect(r.diagnostics).toEqual([]);
      attributes[item.name] = r.value!;
    } else {
      blocks.push({ type: item.type, labels: item.labels.map((l) => l.value), ...readBack(item.body) });
    }
  }
  return { attributes, blocks };
}

/** What the parser will give back for `v`: strings NFC-normalised. */
function normalized(v: Value): Value {
  if (typeof v === "string") return v.normalize("NFC");
  if (Array.isArray(v)) return v.map(normalized);
  if (v !== null && typeof v === "object") {
    const out: Record<string, Value> = {};
    for (const [k, x] of Object.entries(v)) {
      Object.defineProperty(out, k.normalize("NFC"), {
        value: normalized(x),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return v;
}

const text = fc.string({ unit: "grapheme", maxLength: 12 });
const tricky = fc.constantFrom(
  "${",
  "%{",
  "$${",
  "%%{",
  "$",
  "%",
  "\\",
  '"',
  "\n",
  "\r\n",
  "\t",
  "~}",
  "e\u0301",
  "<<EOT",
);
const stringValue = fc.oneof(
  text,
  fc.array(fc.oneof(text, tricky), { maxLength: 6 }).map((parts) => parts.join("")),
);
const { value: valueArb } = fc.letrec<{ value: Value }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    stringValue,
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(stringValue, tie("value"), { maxKeys: 4 }),
  ),
}));
const ident = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,8}$/);
const attrs = fc.dictionary(ident, valueArb, { maxKeys: 5 });
const blockArb: fc.Arbitrary<WriterBlock> = fc.letrec<{ block: WriterBlock }>((tie) => ({
  block: fc.record({
    type: ident,
    labels: fc.array(stringValue, { maxLength: 2 }),
    attributes: attrs,
    blocks: fc.oneof(
      { depthSize: "small" },
      fc.constant<WriterBlock[]>([]),
      fc.array(tie("block"), { maxLength: 2 }),
    ),
  }),
})).block;

describe("round trip", () => {
  it("reads back the lock file document exactly", () => {
    const { file, diagnostics } = parseFile(writeHcl(lockDoc), "lock.hcl");
    expect(diagnostics).toEqual([]);
    expect(readBack(file.body)).toEqual({
      attributes: lockDoc.attributes,
      blocks: lockDoc.blocks!.map((b) => ({ ...b, blocks: [] })),
    });
  });

  it("any value written with writeValue parses back to the same value", () => {
    fc.assert(
      fc.property(valueArb, (v) => {
        const written = writeValue(v);
        const { expr, diagnostics } = parseExpression(written, "v.hcl");
        expect(diagnostics).toEqual([]);
        const r = evaluate(expr!);
        expect(r.diagnostics).toEqual([]);
        expect(r.value).toEqual(normalized(v));
      }),
      { numRuns: 300 },
    );
  });

  it("any document parses back to the same structure, and rewriting it is byte-identical", () => {
    const normalizeBlock = (b: WriterBlock): WriterBlock => ({
      type: b.type,
      labels: (b.labels ?? []).map((l) => l.normalize("NFC")),
      attributes: normalized(b.attributes ?? {}) as Record<string, Value>,
      blocks: (b.blocks ?? []).map(normalizeBlock),
    });
    fc.assert(
      fc.property(attrs, fc.array(blockArb, { maxLength: 3 }), fc.boolean(), (attributes, blocks, sort) => {
        const options = { sortAttributes: sort, sortObjectKeys: sort, sortBlocks: sort };
        const written = writeHcl({ attributes, blocks }, options);
        const { file, diagnostics } = parseFile(written, "doc.hcl");
        expect(diagnostics).toEqual([]);
        const back = readBack(file.body);
        if (!sort) {
          expect(back).toEqual({ attributes: normalized(attributes), blocks: blocks.map(normalizeBlock) });
        }
        expect(writeHcl(back, options)).toBe(written);
      }),
      { numRuns: 150 },
    );
  });
});

describe("writer names", () => {
  it("refuses attribute names and block types hcl/v2 would not read back", () => {
    const doc = (name: string): WriterDocument => ({ attributes: { [name]: 1 } });
    expect(writeHcl(doc("\u00e9t\u00e9"))).toContain("\u00e9t\u00e9 = 1");
    expect(() => writeHcl(doc("a\u200db"))).toThrow(/not a valid HCL attribute name/);
    expect(() => writeHcl(doc("\u0560x"))).toThrow(/not a valid HCL attribute name/);
  });
});
