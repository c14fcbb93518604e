// Tool declarations for vendors: schema.v1.Schema (the common subset) to a JSON Schema
// object, and tool names made acceptable to a vendor's naming rule with a reversible map.
import { type JsonObject, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Schema, SchemaType } from "@pluggableharness/protocol/schema";
import { jsonSchemaTypeName } from "@pluggableharness/protocol/schema-type-names";

export interface JsonSchemaOptions {
  /** Upper-case type names (Gemini's OpenAPI-style `Type` enum). Default false. */
  upperCaseTypes?: boolean;
  /** Give every object schema `properties` (some vendors require it). Default true. */
  objectProperties?: boolean;
}

/**
 * The subset keywords (type, description, properties in declaration order, required,
 * enum, items) as a plain JSON Schema object. Keywords outside the subset are not sent:
 * the kernel already reported them when it loaded the tool.
 */
export function schemaToJson(schema: Schema | undefined, options: JsonSchemaOptions = {}): JsonObject {
  if (!schema) return { type: options.upperCaseTypes ? "OBJECT" : "object", properties: {} };
  const out: JsonObject = {};
  const type = jsonSchemaTypeName(schema.type);
  if (type) out["type"] = options.upperCaseTypes ? type.toUpperCase() : type;
  if (schema.description) out["description"] = schema.description;
  if (
    schema.properties.length > 0 ||
    (schema.type === SchemaType.OBJECT && options.objectProperties !== false)
  ) {
    const props: JsonObject = {};
    for (const p of schema.properties) props[p.name] = schemaToJson(p.schema, options);
    out["properties"] = props;
  }
  if (schema.required.length > 0) out["required"] = [...schema.required];
  if (schema.enum.length > 0) out["enum"] = schema.enum.map((v) => toJson(ValueSchema, v));
  if (schema.items) out["items"] = schemaToJson(schema.items, options);
  return out;
}

export interface ToolNameRule {
  /** Characters a vendor accepts; others become `_`. */
  allowed: RegExp;
  maxLength: number;
  /** A first character the vendor accepts; a name starting otherwise gets a `_` prefix. */
  firstChar?: RegExp;
}

/** Anthropic: ^[a-zA-Z0-9_-]{1,128}$ (Messages API tool name rule). */
export const ANTHROPIC_TOOL_NAMES: ToolNameRule = { allowed: /[A-Za-z0-9_-]/, maxLength: 128 };
/** Gemini function names: letters, digits, underscores, dots, colons and dashes; at most 64; starts with a letter or underscore. */
export const GEMINI_TOOL_NAMES: ToolNameRule = {
  allowed: /[A-Za-z0-9_.:-]/,
  maxLength: 64,
  firstChar: /[A-Za-z_]/,
};
/** OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$. */
export const OPENAI_TOOL_NAMES: ToolNameRule = { allowed: /[A-Za-z0-9_-]/, maxLength: 64 };

export interface ToolNameMap {
  /** The name to send for a canonical tool name (unchanged when already acceptable). */
  toVendor(name: string): string;
  /** The canonical name for a name the vendor returned (unchanged when unknown). */
  fromVendor(name: string): string;
}

/**
 * A reversible, collision-free renaming of the request's tool names (declared tools and
 * names in the history). Acceptable names pass through unchanged, so a well-named tool
 * is never renamed and the common case costs nothing.
 */
export function toolNameMap(names: Iterable<string>, rule: ToolNameRule): ToolNameMap {
  const forward = new Map<string, string>();
  const backward = new Map<string, string>();
  const acceptable = (n: string) =>
    n.length > 0 &&
    n.length <= rule.maxLength &&
    [...n].every((c) => rule.allowed.test(c)) &&
    (!rule.firstChar || rule.firstChar.test(n[0]!));
  const unique = [...new Set(names)];
  for (const n of unique)
    if (acceptable(n)) {
      forward.set(n, n);
      backward.set(n, n);
    }
  for (const n of unique) {
    if (forward.has(n)) continue;
    let base = [...n].map((c) => (rule.allowed.test(c) ? c : "_")).join("") || "tool";
    if (rule.firstChar && !rule.firstChar.test(base[0]!)) base = `_${base}`;
    base = base.slice(0, rule.maxLength);
    let candidate = base;
    for (let i = 2; backward.has(candidate); i++) {
      const suffix = `_${i}`;
      candidate = `${base.slice(0, rule.maxLength - suffix.length)}${suffix}`;
    }
    forward.set(n, candidate);
    backward.set(candidate, n);
  }
  return {
    toVendor: (n) => forward.get(n) ?? n,
    fromVendor: (n) => backward.get(n) ?? n,
  };
}
