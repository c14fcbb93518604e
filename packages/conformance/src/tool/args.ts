// Arguments synthesised from an input_schema: every required property filled with a
// plain value of its type, for calls that only need to be well-formed.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Schema, SchemaType } from "@pluggableharness/protocol/schema";

export function sampleValue(schema: Schema | undefined): JsonValue {
  if (!schema) return "conformance";
  if (schema.enum.length > 0) return toJson(ValueSchema, schema.enum[0]!);
  switch (schema.type) {
    case SchemaType.OBJECT:
      return sampleArguments(schema);
    case SchemaType.ARRAY:
      return [];
    case SchemaType.INTEGER:
    case SchemaType.NUMBER:
      return 1;
    case SchemaType.BOOLEAN:
      return false;
    case SchemaType.NULL:
      return null;
    default:
      return "conformance";
  }
}

export function sampleArguments(schema: Schema | undefined): JsonObject {
  const out: JsonObject = {};
  if (!schema) return out;
  for (const name of schema.required) {
    out[name] = sampleValue(schema.properties.find((p) => p.name === name)?.schema);
  }
  return out;
}
