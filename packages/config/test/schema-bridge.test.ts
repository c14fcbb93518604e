// The schema bridge: decoding provider bodies against a ConfigSchema.

import { create } from "@bufbuild/protobuf";
import { AttributeType, ConfigSchemaSchema } from "@pluggableharness/protocol/config";
import { describe, expect, it } from "vitest";
import {
  type AgentConfig,
  decodeProviderConfig,
  loadConfigSource,
  redactedValues,
  toStruct,
  validateConfigSchema,
} from "../src/index.ts";
import { CANARY, TEST_ENV, VENDOR_SCHEMA } from "./helpers.ts";

const HEADER = `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0"
  }
}
`;

function config(body: string): AgentConfig {
  const r = loadConfigSource(`${HEADER}provider "anthropic" {\n${body}}\n`, "agent.hcl", "/p");
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.detail).join("\n"));
  return r.config;
}

function decode(body: string, env: Record<string, string> = TEST_ENV) {
  return decodeProviderConfig(config(body), "anthropic", VENDOR_SCHEMA, env);
}

describe("decoding", () => {
  it("decodes every attribute type, applies defaults and zero values, keeps schema order", () => {
    const r = decode(`
  verbose   = true
  api_key   = env("ANTHROPIC_API_KEY")
  timeout_s = 30
  models    = ["a", "b"]
  headers   = { "x-team" = "core", retries = 3 }
  auth {
    token = env("ANTHROPIC_API_KEY")
    tls {
      ca = "/etc/ca.pem"
    }
  }
`);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.values).toEqual({
      api_key: CANARY,
      base_url: "https://api.example.com",
      timeout_s: 30,
      verbose: true,
      models: ["a", "b"],
      weights: [1, 2],
      headers: { "x-team": "core", retries: "3" },
      auth: { token: CANARY, user: "", tls: { verify: true, ca: "/etc/ca.pem" } },
    });
    expect(Object.keys(r.config.values)).toEqual([
      "api_key",
      "base_url",
      "timeout_s",
      "verbose",
      "models",
      "weights",
      "headers",
      "auth",
    ]);
    expect(r.config.sensitivePaths).toEqual([["api_key"], ["auth", "token"]]);
  });

  it("accepts object-constructor syntax for object attributes and converts primitives like HCL", () => {
    const r = decode(`
  api_key   = env("ANTHROPIC_API_KEY")
  timeout_s = "2.5"
  verbose   = "false"
  models    = [1, true]
  auth      = { token = env("ANTHROPIC_API_KEY"), tls = { verify = false } }
`);
    expect(r.ok && r.config.values).toMatchObject({
      timeout_s: 2.5,
      verbose: false,
      models: ["1", "true"],
      auth: { tls: { verify: false, ca: "" } },
    });
  });

  it("treats null as omitted: the default applies", () => {
    const r = decode(`  api_key  = env("ANTHROPIC_API_KEY")\n  base_url = null\n`);
    expect(r.ok && r.config.values.base_url).toBe("https://api.example.com");
  });

  it("fills an omitted optional object with its nested defaults", () => {
    const r = decode(`  api_key = env("ANTHROPIC_API_KEY")\n`);
    expect(r.ok && r.config.values.auth).toEqual({ token: "", user: "", tls: { verify: true, ca: "" } });
  });

  it("decodes a provider without a block against its schema", () => {
    const cfg = loadConfigSource(HEADER, "agent.hcl", "/p");
    if (!cfg.ok) throw new Error("load failed");
    const schema = create(ConfigSchemaSchema, {
      attributes: [{ name: "roots", type: AttributeType.LIST_STRING, defaultJson: '["."]' }],
    });
    const r = decodeProviderConfig(cfg.config, "anthropic", schema, {});
    expect(r.ok && r.config.values).toEqual({ roots: ["."] });
    const missing = decodeProviderConfig(cfg.config, "anthropic", VENDOR_SCHEMA, TEST_ENV);
    expect(!missing.ok && missing.diagnostics.map((d) => [d.category, d.line, d.column])).toEqual([
      ["missing_attribute", 2, 3],
    ]);
  });

  it("resolves relative path attributes against the directory of agent.hcl, path.root included", () => {
    const schema = create(ConfigSchemaSchema, {
      attributes: [
        { name: "roots", type: AttributeType.LIST_STRING, path: true },
        { name: "home", type: AttributeType.STRING, path: true },
        { name: "cache", type: AttributeType.STRING, path: true, defaultJson: '".cache"' },
        { name: "label", type: AttributeType.STRING },
      ],
    });
    const r = decodeProviderConfig(
      config(
        `  roots = [".", "src/../lib", "/abs", "${"$"}{path.root}/x"]\n  home = "h"\n  label = "./kept"\n`,
      ),
      "anthropic",
      schema,
      {},
    );
    expect(r.ok && r.config.values).toEqual({
      roots: ["/p", "/p/lib", "/abs", "/p/x"],
      home: "/p/h",
      cache: "/p/.cache",
      label: "./kept",
    });
  });

  it("collects every problem of a body in one pass", () => {
    const r = decode(`
  api_key   = "literal"
  timeout_s = "soon"
  unknown   = 1
`);
    expect(!r.ok && r.diagnostics.map((d) => d.category).sort()).toEqual([
      "secret_literal",
      "type",
      "unknown_attribute",
    ]);
  });

  it("produces a google.protobuf.Struct and a redacted copy", () => {
    const r = decode(
      `  api_key = env("ANTHROPIC_API_KEY")\n  models = ["m"]\n  auth = { token = env("SET_VAR") }\n`,
    );
    if (!r.ok) throw new Error("decode failed");
    const struct = toStruct(r.config.values);
    expect(struct.fields.api_key?.kind).toEqual({ case: "stringValue", value: CANARY });
    expect(struct.fields.models?.kind.case).toBe("listValue");
    const shown = redactedValues(r.config);
    expect(shown.api_key).toBe("(sensitive)");
    expect((shown.auth as Record<string, unknown>).token).toBe("(sensitive)");
    expect(JSON.stringify(shown)).not.toContain(CANARY);
    expect(r.config.values.api_key).toBe(CANARY);
  });

  it("resolves sensitive numbers and bools from the environment", () => {
    const schema = create(ConfigSchemaSchema, {
      attributes: [
        { name: "port", type: AttributeType.NUMBER, sensitive: true },
        { name: "flag", type: AttributeType.BOOL, sensitive: true },
      ],
    });
    const cfg = config(`  port = env("PORT")\n  flag = env("FLAG")\n`);
    const ok = decodeProviderConfig(cfg, "anthropic", schema, { PORT: "8080", FLAG: "true" });
    expect(ok.ok && ok.config.values).toEqual({ port: 8080, flag: true });
    const bad = decodeProviderConfig(cfg, "anthropic", schema, { PORT: "eighty", FLAG: "yes" });
    expect(!bad.ok && bad.diagnostics.map((d) => d.category)).toEqual(["type", "type"]);
    expect(JSON.stringify(bad)).not.toMatch(/eighty|"yes"/);
  });
});

describe("schema validation", () => {
  const at = {
    filename: "agent.hcl",
    start: { line: 3, column: 10, byte: 0 },
    end: { line: 3, column: 12, byte: 2 },
  };
  const schema = (
    attributes: Parameters<typeof create<typeof ConfigSchemaSchema>>[1] extends infer I ? I : never,
  ) => create(ConfigSchemaSchema, attributes);

  it.each([
    [{ name: "x", type: AttributeType.UNSPECIFIED }, "no (or an unknown) type"],
    [{ name: "x", type: AttributeType.OBJECT }, "needs object_attributes"],
    [
      { name: "x", type: AttributeType.NUMBER, path: true },
      "path is only supported on string and list(string)",
    ],
    [
      {
        name: "x",
        type: AttributeType.STRING,
        objectAttributes: [{ name: "y", type: AttributeType.STRING }],
      },
      "only allowed on object",
    ],
    [{ name: "x", type: AttributeType.LIST_STRING, sensitive: true }, "sensitive is only supported"],
    [
      { name: "x", type: AttributeType.STRING, sensitive: true, defaultJson: '"s"' },
      "cannot declare default_json",
    ],
    [{ name: "x", type: AttributeType.STRING, required: true, defaultJson: '"s"' }, "would never apply"],
    [{ name: "x", type: AttributeType.NUMBER, defaultJson: "{nope" }, "not valid JSON"],
    [{ name: "x", type: AttributeType.LIST_NUMBER, defaultJson: '["1"]' }, "array of numbers"],
    [{ name: "x", type: AttributeType.MAP_STRING, defaultJson: '{"a": 1}' }, "object of strings"],
    [{ name: "x", type: AttributeType.BOOL, defaultJson: '"true"' }, "JSON boolean"],
    [
      {
        name: "o",
        type: AttributeType.OBJECT,
        defaultJson: '{"z": 1}',
        objectAttributes: [{ name: "a", type: AttributeType.NUMBER }],
      },
      'unknown key "z"',
    ],
    [
      {
        name: "o",
        type: AttributeType.OBJECT,
        defaultJson: '{"a": "1"}',
        objectAttributes: [{ name: "a", type: AttributeType.NUMBER }],
      },
      "a: expected a JSON number",
    ],
    [{ name: "bad name", type: AttributeType.STRING }, "identifiers"],
  ])("rejects %j", (attr, message) => {
    const d = validateConfigSchema(schema({ attributes: [attr] }), "p", at);
    expect(d).toHaveLength(1);
    expect(d[0]!.category).toBe("schema");
    expect(d[0]!.detail).toContain(message);
    expect([d[0]!.line, d[0]!.column]).toEqual([3, 10]);
  });

  it("rejects duplicate names and checks nested attributes recursively", () => {
    const d = validateConfigSchema(
      schema({
        attributes: [
          { name: "a", type: AttributeType.STRING },
          { name: "a", type: AttributeType.STRING },
          {
            name: "o",
            type: AttributeType.OBJECT,
            objectAttributes: [
              { name: "s", type: AttributeType.STRING, sensitive: true, defaultJson: '"x"' },
            ],
          },
        ],
      }),
      "p",
      at,
    );
    expect(d.map((x) => x.detail)).toEqual([
      "a: declared twice",
      "o.s: a sensitive attribute cannot declare default_json",
    ]);
  });

  it("accepts the vendor schema", () => {
    expect(validateConfigSchema(VENDOR_SCHEMA, "p", at)).toEqual([]);
  });
});
