// The common JSON-Schema subset (type, properties, required, enum, items, description)
// carried by schema.v1.Schema, and what the kernel does with keywords outside it.
//
// Decision (docs/decisions/domain-model.md): keywords that change which values
// are valid in ways the subset cannot express (composition, references, conditionals,
// pattern-keyed or schema-valued additional properties, tuple forms) reject the whole
// GetSchema response. `const` is translated into a one-value `enum`. Every other keyword
// (format, pattern, bounds, titles, defaults, vendor x-* keys, ...) is accepted with a
// warning and dropped: it is neither sent to models nor enforced by the kernel, because
// tool authors must not rely on it.
import { clone, create, fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Schema, SchemaSchema } from "@pluggableharness/protocol/schema";
import { jsonSchemaTypeName } from "@pluggableharness/protocol/schema-type-names";

/** Keywords that would change a schema's meaning if dropped; their presence is a rejection. */
export const STRUCTURAL_KEYWORDS: ReadonlySet<string> = new Set([
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "$ref",
  "$dynamicRef",
  "$recursiveRef",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
  "patternProperties",
  "propertyNames",
  "prefixItems",
  "contains",
  "unevaluatedProperties",
  "unevaluatedItems",
  "additionalItems",
]);

export interface SchemaIssue {
  /** JSON-pointer-like path of the schema node, "" for the root. */
  readonly path: string;
  readonly keyword: string;
  readonly message: string;
}

export interface SchemaTranslation {
  /** The schema as the kernel uses it: only subset keywords, `const` turned into `enum`. */
  readonly schema: Schema;
  /** Reasons to reject the declaring response. */
  readonly errors: readonly SchemaIssue[];
  /** Keywords dropped with a warning. */
  readonly warnings: readonly SchemaIssue[];
}

function isTrivialAdditionalProperties(v: JsonValue): boolean {
  return (
    typeof v === "boolean" ||
    (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0)
  );
}

/** Checks a schema against the subset and returns its translated form. Never throws. */
export function translateSchema(input: Schema): SchemaTranslation {
  const errors: SchemaIssue[] = [];
  const warnings: SchemaIssue[] = [];
  const schema = walk(input, "", errors, warnings);
  return { schema, errors, warnings };
}

function walk(node: Schema, path: string, errors: SchemaIssue[], warnings: SchemaIssue[]): Schema {
  const out = clone(SchemaSchema, node);
  out.extraKeywords = undefined;
  const extra: JsonObject = node.extraKeywords ?? {};
  for (const [keyword, value] of Object.entries(extra)) {
    if (STRUCTURAL_KEYWORDS.has(keyword)) {
      errors.push({
        path,
        keyword,
        message: `keyword "${keyword}" is outside the common JSON-Schema subset`,
      });
    } else if (
      keyword === "additionalProperties" &&
      value !== undefined &&
      !isTrivialAdditionalProperties(value)
    ) {
      errors.push({
        path,
        keyword,
        message: `a schema-valued "additionalProperties" is outside the common JSON-Schema subset`,
      });
    } else if (keyword === "const") {
      if (node.enum.length > 0) {
        errors.push({ path, keyword, message: `"const" together with "enum" is ambiguous` });
      } else {
        out.enum = [fromJson(ValueSchema, value ?? null)];
        warnings.push({ path, keyword, message: `"const" translated into a one-value "enum"` });
      }
    } else {
      warnings.push({ path, keyword, message: `keyword "${keyword}" is not supported and was dropped` });
    }
  }
  const seen = new Set<string>();
  for (const [i, prop] of node.properties.entries()) {
    if (seen.has(prop.name)) {
      errors.push({ path, keyword: "properties", message: `property "${prop.name}" is declared twice` });
    }
    seen.add(prop.name);
    const child = prop.schema ?? create(SchemaSchema);
    out.properties[i]!.schema = walk(child, `${path}/properties/${prop.name}`, errors, warnings);
  }
  for (const name of node.required) {
    if (!seen.has(name)) {
      errors.push({ path, keyword: "required", message: `required property "${name}" is not declared` });
    }
  }
  if (node.items) out.items = walk(node.items, `${path}/items`, errors, warnings);
  return out;
}

/** The subset keywords of a schema as a plain JSON Schema object (extra keywords ignored). */
export function toJsonSchema(schema: Schema): JsonObject {
  const out: JsonObject = {};
  const type = jsonSchemaTypeName(schema.type);
  if (type) out["type"] = type;
  if (schema.description) out["description"] = schema.description;
  if (schema.properties.length > 0) {
    const props: JsonObject = {};
    for (const p of schema.properties) props[p.name] = p.schema ? toJsonSchema(p.schema) : {};
    out["properties"] = props;
  }
  if (schema.required.length > 0) out["required"] = [...schema.required];
  if (schema.enum.length > 0) out["enum"] = schema.enum.map((v) => toJson(ValueSchema, v));
  if (schema.items) out["items"] = toJsonSchema(schema.items);
  return out;
}
