// The JSON Schema `type` keyword for each schema.v1 SchemaType: the kernel (which checks
// and shows tool schemas) and model-kit (which sends them to vendors) write the same names.
import { SchemaType } from "./gen/schema.ts";

const NAMES: Record<number, string> = {
  [SchemaType.OBJECT]: "object",
  [SchemaType.STRING]: "string",
  [SchemaType.NUMBER]: "number",
  [SchemaType.INTEGER]: "integer",
  [SchemaType.BOOLEAN]: "boolean",
  [SchemaType.ARRAY]: "array",
  [SchemaType.NULL]: "null",
};

/** The JSON Schema name of `type`; undefined for SCHEMA_TYPE_UNSPECIFIED or an unknown value. */
export function jsonSchemaTypeName(type: SchemaType): string | undefined {
  return NAMES[type];
}
