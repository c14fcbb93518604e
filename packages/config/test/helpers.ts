// Shared test fixtures: schemas, provider facts and the fixture installation root.

import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { AttributeType, type ConfigSchema, ConfigSchemaSchema } from "@pluggableharness/protocol/config";

export const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
export const INSTALL_ROOT = fileURLToPath(new URL("./fixtures/install/", import.meta.url));

/** A value that must never show up anywhere but the decoded Configure payload. */
export const CANARY = "sk-canary-7f3a9c1e5b2d4f6a8c0e";

export const TEST_ENV = { ANTHROPIC_API_KEY: CANARY, SET_VAR: "value" } as const;

export const VENDOR_SCHEMA: ConfigSchema = create(ConfigSchemaSchema, {
  attributes: [
    { name: "api_key", type: AttributeType.STRING, required: true, sensitive: true },
    { name: "base_url", type: AttributeType.STRING, defaultJson: '"https://api.example.com"' },
    { name: "timeout_s", type: AttributeType.NUMBER },
    { name: "verbose", type: AttributeType.BOOL },
    { name: "models", type: AttributeType.LIST_STRING },
    { name: "weights", type: AttributeType.LIST_NUMBER, defaultJson: "[1, 2]" },
    { name: "headers", type: AttributeType.MAP_STRING },
    {
      name: "auth",
      type: AttributeType.OBJECT,
      objectAttributes: [
        { name: "token", type: AttributeType.STRING, required: true, sensitive: true },
        { name: "user", type: AttributeType.STRING },
        {
          name: "tls",
          type: AttributeType.OBJECT,
          objectAttributes: [
            { name: "verify", type: AttributeType.BOOL, defaultJson: "true" },
            { name: "ca", type: AttributeType.STRING },
          ],
        },
      ],
    },
  ],
});

export const SCHEMAS: Record<string, ConfigSchema> = {
  vendor: VENDOR_SCHEMA,
  bad_default_sensitive: create(ConfigSchemaSchema, {
    attributes: [
      { name: "api_key", type: AttributeType.STRING, sensitive: true, defaultJson: '"sk-default"' },
    ],
  }),
  bad_default_type: create(ConfigSchemaSchema, {
    attributes: [
      { name: "api_key", type: AttributeType.STRING, required: true, sensitive: true },
      { name: "count", type: AttributeType.NUMBER, defaultJson: '"ten"' },
    ],
  }),
  bad_object: create(ConfigSchemaSchema, {
    attributes: [{ name: "auth", type: AttributeType.OBJECT }],
  }),
};

export const FACTS = {
  filesystem: { tools: ["read_file", "write_file", "edit_file"], hookPoints: [] },
  anthropic: { models: ["claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5"] },
} as const;
