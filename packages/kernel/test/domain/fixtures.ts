// Builders for the protobuf values the domain tests feed in. Defaults are valid, so each
// test states only the field its rule is about.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import {
  type ModelSpec,
  ModelSpecSchema,
  type PricingTier,
  PricingTierSchema,
  ThinkingDisable,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { type Schema, SchemaSchema, SchemaType } from "@pluggableharness/protocol/schema";
import {
  type GetSchemaResponse,
  GetSchemaResponseSchema,
  RiskClass,
  ToolKind,
  type ToolSchema,
  ToolSchemaSchema,
} from "@pluggableharness/protocol/tool";
import { timestampFromMillis } from "../../src/domain/time.ts";
import { type ValidatedTool, validateToolSchemas } from "../../src/domain/tool-schema.ts";

export function objectSchema(props: Record<string, SchemaType> = {}, required: string[] = []): Schema {
  return create(SchemaSchema, {
    type: SchemaType.OBJECT,
    properties: Object.entries(props).map(([name, type]) => ({ name, schema: { type } })),
    required,
  });
}

export function tool(init: MessageInitShape<typeof ToolSchemaSchema> = {}): ToolSchema {
  return create(ToolSchemaSchema, {
    name: "read_file",
    kind: ToolKind.DATA_SOURCE,
    risk: RiskClass.READ_ONLY,
    description: "Reads a file",
    inputSchema: objectSchema({ path: SchemaType.STRING }, ["path"]),
    outputSchema: objectSchema({ content: SchemaType.STRING }, ["content"]),
    concurrency: { safe: true },
    ...init,
  } as MessageInitShape<typeof ToolSchemaSchema>);
}

export function resource(init: MessageInitShape<typeof ToolSchemaSchema> = {}): ToolSchema {
  return tool({
    name: "write_file",
    kind: ToolKind.RESOURCE,
    risk: RiskClass.MODERATE,
    description: "Writes a file",
    inputSchema: objectSchema({ path: SchemaType.STRING, content: SchemaType.STRING }, ["path"]),
    outputSchema: objectSchema({ ok: SchemaType.BOOLEAN }),
    concurrency: { safe: true, keyFields: ["path"] },
    ...init,
  } as MessageInitShape<typeof ToolSchemaSchema>);
}

export function interactive(init: MessageInitShape<typeof ToolSchemaSchema> = {}): ToolSchema {
  return tool({
    name: "ask_user",
    kind: ToolKind.INTERACTIVE,
    risk: RiskClass.READ_ONLY,
    description: "Asks the user",
    inputSchema: objectSchema({ question: SchemaType.STRING }),
    outputSchema: objectSchema({ answer: SchemaType.STRING }),
    concurrency: undefined,
    ...init,
  } as MessageInitShape<typeof ToolSchemaSchema>);
}

export function schemaResponse(
  tools: ToolSchema[],
  init: MessageInitShape<typeof GetSchemaResponseSchema> = {},
): GetSchemaResponse {
  return create(GetSchemaResponseSchema, { tools, ...init });
}

/** Validates one operation of a provider and returns it. */
export function validated(schema: ToolSchema, provider = "fs"): ValidatedTool {
  return validateToolSchemas(provider, schemaResponse([schema])).tools.get(schema.name)!;
}

export function seconds(s: number) {
  return create(DurationSchema, { seconds: BigInt(s) });
}

export function tier(init: MessageInitShape<typeof PricingTierSchema> = {}): PricingTier {
  return create(PricingTierSchema, { inputPerMtok: 3, outputPerMtok: 15, ...init });
}

export const at = (iso: string) => timestampFromMillis(Date.parse(iso));

export function model(init: MessageInitShape<typeof ModelSpecSchema> = {}): ModelSpec {
  return create(ModelSpecSchema, {
    id: "m-1",
    contextWindow: 200_000n,
    maxOutputTokens: 8_192n,
    supportsToolUse: true,
    supportsVision: true,
    supportsStreaming: true,
    supportsParallelToolCalls: true,
    supportsDocuments: true,
    thinking: {
      supported: true,
      effort: { levels: ["low", "medium", "high"], default: "medium" },
      budget: { range: { min: 1024n, max: 32_000n }, default: 4096n, deprecated: false },
      adaptiveByDefault: false,
      disable: ThinkingDisable.ALWAYS,
    },
    caching: { supported: true, explicitMarkers: true, implicitAutomatic: false },
    pricing: {
      currency: "USD",
      free: false,
      tiers: [{ inputPerMtok: 3, outputPerMtok: 15, cacheReadPerMtok: 0.3, cacheWritePerMtok: 3.75 }],
    },
    supportedToolChoiceModes: [
      ToolChoiceMode.AUTO,
      ToolChoiceMode.ANY,
      ToolChoiceMode.NONE,
      ToolChoiceMode.SPECIFIC,
    ],
    ...init,
  } as MessageInitShape<typeof ModelSpecSchema>);
}

/** A model without thinking, caching or tools: the all-zero declarations. */
export function plainModel(init: MessageInitShape<typeof ModelSpecSchema> = {}): ModelSpec {
  return model({
    id: "plain",
    thinking: { supported: false },
    caching: { supported: false },
    pricing: { currency: "USD", tiers: [{ inputPerMtok: 1, outputPerMtok: 2 }] },
    ...init,
  } as MessageInitShape<typeof ModelSpecSchema>);
}
