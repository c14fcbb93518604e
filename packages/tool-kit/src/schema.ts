// Tool input/output schemas written as small plain objects, converted to the wire's
// schema.v1.Schema (the common JSON-Schema subset) and checked against call arguments
// without pulling a JSON-Schema engine into a plugin's start-up path.
import type { JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import { type SchemaSchema, SchemaType } from "@pluggableharness/protocol/schema";

export type JsonSchema =
  | ObjectSchema
  | StringSchema
  | { type: "integer"; description?: string }
  | { type: "number"; description?: string }
  | { type: "boolean"; description?: string }
  | { type: "array"; description?: string; items: JsonSchema };

export interface StringSchema<V extends readonly string[] = readonly string[]> {
  type: "string";
  description?: string;
  enum?: V;
}

export interface ObjectSchema<
  P extends Readonly<Record<string, JsonSchema>> = Readonly<Record<string, JsonSchema>>,
  R extends readonly string[] = readonly string[],
> {
  type: "object";
  description?: string;
  /** Declaration order is the order models see. */
  properties: P;
  required?: R;
}

/**
 * The TypeScript type of a value that passes `checkValue(schema, …)`: what a tool's
 * handler receives for its declared input. Properties not in `required` are optional;
 * an enum is the union of its values.
 */
export type Infer<S> =
  S extends ObjectSchema<infer P, infer R>
    ? Flatten<
        { -readonly [K in keyof P & R[number]]: Infer<P[K]> } & {
          -readonly [K in Exclude<keyof P, R[number]>]?: Infer<P[K]>;
        }
      >
    : S extends { type: "array"; items: infer I }
      ? Infer<I>[]
      : S extends { type: "string"; enum?: infer V }
        ? V extends readonly (infer E extends string)[]
          ? string extends E
            ? string
            : E
          : string
        : S extends { type: "integer" | "number" }
          ? number
          : S extends { type: "boolean" }
            ? boolean
            : never;

type Flatten<T> = { [K in keyof T]: T[K] };

/**
 * Terse builders: `s.object({ path: s.string("...") }, ["path"])`. Each keeps its literal
 * shape in its type, so `Infer` can read the argument type off a declared schema.
 */
export const s = {
  object<const P extends Readonly<Record<string, JsonSchema>>, const R extends readonly string[] = []>(
    properties: P,
    required?: R,
    description?: string,
  ): ObjectSchema<P, R> {
    return {
      type: "object",
      properties,
      required: required ?? ([] as unknown as R),
      ...(description ? { description } : {}),
    };
  },
  string<const V extends readonly string[] = readonly string[]>(
    description?: string,
    values?: V,
  ): StringSchema<V> {
    return { type: "string", ...(description ? { description } : {}), ...(values ? { enum: values } : {}) };
  },
  integer(description?: string): { type: "integer"; description?: string } {
    return { type: "integer", ...(description ? { description } : {}) };
  },
  number(description?: string): { type: "number"; description?: string } {
    return { type: "number", ...(description ? { description } : {}) };
  },
  boolean(description?: string): { type: "boolean"; description?: string } {
    return { type: "boolean", ...(description ? { description } : {}) };
  },
  array<const I extends JsonSchema>(
    items: I,
    description?: string,
  ): { type: "array"; description?: string; items: I } {
    return { type: "array", items, ...(description ? { description } : {}) };
  },
};

const WIRE_TYPES = {
  object: SchemaType.OBJECT,
  string: SchemaType.STRING,
  integer: SchemaType.INTEGER,
  number: SchemaType.NUMBER,
  boolean: SchemaType.BOOLEAN,
  array: SchemaType.ARRAY,
} as const;

/** The schema.v1.Schema init shape for a JsonSchema. */
export function toWireSchema(schema: JsonSchema): MessageInitShape<typeof SchemaSchema> {
  const out: MessageInitShape<typeof SchemaSchema> = { type: WIRE_TYPES[schema.type] };
  if (schema.description) out.description = schema.description;
  if (schema.type === "object") {
    out.properties = Object.entries(schema.properties).map(([name, sub]) => ({
      name,
      schema: toWireSchema(sub),
    }));
    out.required = [...(schema.required ?? [])];
  } else if (schema.type === "array") {
    out.items = toWireSchema(schema.items);
  } else if (schema.type === "string" && schema.enum) {
    out.enum = schema.enum.map((v) => ({ kind: { case: "stringValue" as const, value: v } }));
  }
  return out;
}

function typeOf(value: JsonValue | undefined): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * Checks `value` against `schema`; returns one message per problem ("path: what").
 * Properties the schema does not declare are ignored, as the subset has no way to
 * forbid them.
 */
export function checkValue(schema: JsonSchema, value: JsonValue | undefined, path = "arguments"): string[] {
  const problems: string[] = [];
  const actual = typeOf(value);
  switch (schema.type) {
    case "object": {
      if (actual !== "object") return [`${path}: expected an object, got ${actual}`];
      const obj = value as Record<string, JsonValue>;
      for (const name of schema.required ?? []) {
        if (obj[name] === undefined || obj[name] === null) problems.push(`${path}.${name}: is required`);
      }
      for (const [name, sub] of Object.entries(schema.properties)) {
        const v = obj[name];
        if (v === undefined || v === null) continue;
        problems.push(...checkValue(sub, v, `${path}.${name}`));
      }
      return problems;
    }
    case "array": {
      if (actual !== "array") return [`${path}: expected an array, got ${actual}`];
      (value as JsonValue[]).forEach((item, i) => {
        problems.push(...checkValue(schema.items, item, `${path}[${i}]`));
      });
      return problems;
    }
    case "integer":
      if (actual !== "number" || !Number.isInteger(value)) return [`${path}: expected an integer`];
      return [];
    case "number":
      if (actual !== "number" || !Number.isFinite(value)) return [`${path}: expected a number`];
      return [];
    case "boolean":
      return actual === "boolean" ? [] : [`${path}: expected a boolean, got ${actual}`];
    case "string":
      if (actual !== "string") return [`${path}: expected a string, got ${actual}`];
      if (schema.enum && !schema.enum.includes(value as string)) {
        return [`${path}: must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`];
      }
      return [];
  }
}
