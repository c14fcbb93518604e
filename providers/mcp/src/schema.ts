// An MCP tool's JSON Schema (any draft, as servers write it) translated into the common
// subset schema.v1.Schema carries: local `$ref`s inlined, `allOf` merged, nullable unions
// collapsed to their non-null branch, other unions left untyped (any value; the server
// still validates), and keywords outside the subset dropped here rather than one kernel
// warning per keyword per tool. What a dropped keyword said is kept in the description
// where a model can still use it (format, bounds, defaults).
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import { type SchemaSchema, SchemaType } from "@pluggableharness/protocol/schema";

export type WireSchema = MessageInitShape<typeof SchemaSchema>;

const TYPES: Record<string, SchemaType> = {
  object: SchemaType.OBJECT,
  string: SchemaType.STRING,
  number: SchemaType.NUMBER,
  integer: SchemaType.INTEGER,
  boolean: SchemaType.BOOLEAN,
  array: SchemaType.ARRAY,
  null: SchemaType.NULL,
};

/** How deep `$ref`s are followed: a recursive schema ends in an untyped node. */
const MAX_DEPTH = 12;

/** Keywords a model can use when they are restated in words. */
const HINTS = ["format", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"];

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

function enumValue(v: JsonValue): WireSchema["enum"] extends (infer E)[] | undefined ? E : never {
  if (v === null) return { kind: { case: "nullValue", value: 0 } };
  if (typeof v === "string") return { kind: { case: "stringValue", value: v } };
  if (typeof v === "number") return { kind: { case: "numberValue", value: v } };
  if (typeof v === "boolean") return { kind: { case: "boolValue", value: v } };
  return { kind: { case: "stringValue", value: JSON.stringify(v) } };
}

function resolveRef(root: JsonObject, ref: string): JsonObject | undefined {
  if (!ref.startsWith("#")) return undefined; // remote references are not fetched
  const parts = ref
    .slice(1)
    .split("/")
    .filter((p) => p !== "")
    .map((p) => decodeURIComponent(p).replaceAll("~1", "/").replaceAll("~0", "~"));
  let node: JsonValue = root;
  for (const p of parts) {
    if (!isObject(node)) return undefined;
    node = node[p] as JsonValue;
  }
  return isObject(node) ? node : undefined;
}

/** The schema with `$ref` and `allOf` folded in, and a nullable union reduced to its other branch. */
function normalize(root: JsonObject, node: JsonObject, depth: number): JsonObject | undefined {
  if (depth > MAX_DEPTH) return undefined;
  let n: JsonObject = { ...node };
  if (typeof n["$ref"] === "string") {
    const target = resolveRef(root, n["$ref"]);
    const { $ref: _, ...rest } = n;
    if (!target) return { ...rest };
    const resolved = normalize(root, target, depth + 1);
    if (!resolved) return undefined;
    n = { ...resolved, ...rest };
  }
  if (Array.isArray(n["allOf"])) {
    const parts = (n["allOf"] as JsonValue[]).filter(isObject).map((p) => normalize(root, p, depth + 1));
    const { allOf: _, ...rest } = n;
    n = rest;
    for (const p of parts) if (p) n = merge(n, p);
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    if (!Array.isArray(n[key])) continue;
    const branches = (n[key] as JsonValue[])
      .filter(isObject)
      .map((b) => normalize(root, b, depth + 1))
      .filter((b): b is JsonObject => b !== undefined);
    const nonNull = branches.filter((b) => b["type"] !== "null");
    const { [key]: _, ...rest } = n;
    n = rest;
    if (nonNull.length === 1) n = merge(n, nonNull[0]!);
    else if (nonNull.length > 1) {
      const types = new Set(nonNull.map((b) => b["type"]));
      if (types.size === 1 && typeof nonNull[0]!["type"] === "string") {
        let m: JsonObject = { type: nonNull[0]!["type"] };
        for (const b of nonNull) m = merge(m, b, true);
        n = merge(n, m);
      } else {
        const kinds = nonNull
          .map((b) => (typeof b["type"] === "string" ? b["type"] : "a schema"))
          .join(" or ");
        n["description"] = [n["description"], `One of: ${kinds}.`].filter(Boolean).join(" ");
      }
    }
  }
  if (Array.isArray(n["type"])) {
    const t = (n["type"] as JsonValue[]).filter((x) => x !== "null");
    n["type"] = t.length === 1 ? (t[0] as string) : null;
    if (n["type"] === null) delete n["type"];
  }
  return n;
}

/** Properties and constraints of `b` added to `a`; `union` keeps only required names both share. */
function merge(a: JsonObject, b: JsonObject, union = false): JsonObject {
  const out: JsonObject = { ...b, ...a };
  if (isObject(a["properties"]) || isObject(b["properties"])) {
    out["properties"] = { ...(b["properties"] as JsonObject), ...(a["properties"] as JsonObject) };
  }
  const ra = Array.isArray(a["required"]) ? (a["required"] as string[]) : [];
  const rb = Array.isArray(b["required"]) ? (b["required"] as string[]) : [];
  if (union)
    out["required"] = "type" in a && !Array.isArray(a["required"]) ? rb : ra.filter((r) => rb.includes(r));
  else out["required"] = [...new Set([...ra, ...rb])];
  if (Array.isArray(a["enum"]) && Array.isArray(b["enum"]) && union) {
    out["enum"] = [...new Set([...(a["enum"] as JsonValue[]), ...(b["enum"] as JsonValue[])])];
  }
  return out;
}

function hintsOf(n: JsonObject): string {
  const parts: string[] = [];
  for (const k of HINTS)
    if (n[k] !== undefined && typeof n[k] !== "object") parts.push(`${k} ${String(n[k])}`);
  if (n["default"] !== undefined) parts.push(`default ${JSON.stringify(n["default"])}`);
  return parts.length > 0 ? `(${parts.join(", ")})` : "";
}

function walk(root: JsonObject, raw: JsonObject, depth: number): WireSchema {
  const n = normalize(root, raw, depth);
  if (!n) return { description: "(a recursive schema, not expanded)" };
  const out: WireSchema = {};
  const type = typeof n["type"] === "string" ? TYPES[n["type"]] : undefined;
  if (type !== undefined) out.type = type;
  const description = [typeof n["description"] === "string" ? n["description"] : "", hintsOf(n)]
    .filter((s) => s !== "")
    .join(" ");
  if (description) out.description = description;
  if (Array.isArray(n["enum"])) out.enum = (n["enum"] as JsonValue[]).map(enumValue);
  else if (n["const"] !== undefined) out.enum = [enumValue(n["const"] as JsonValue)];
  if (isObject(n["properties"]) || type === SchemaType.OBJECT) {
    const props = isObject(n["properties"]) ? n["properties"] : {};
    out.properties = Object.entries(props)
      .filter(([, v]) => isObject(v) || v === true)
      .map(([name, v]) => ({ name, schema: walk(root, isObject(v) ? v : {}, depth + 1) }));
    const declared = new Set(out.properties.map((p) => p.name));
    out.required = (Array.isArray(n["required"]) ? (n["required"] as JsonValue[]) : []).filter(
      (r): r is string => typeof r === "string" && declared.has(r),
    );
  }
  if (isObject(n["items"])) out.items = walk(root, n["items"], depth + 1);
  return out;
}

/** The wire schema of an MCP inputSchema / outputSchema; always an object at the top. */
export function toWire(schema: unknown): WireSchema {
  const root = isObject(schema) ? schema : {};
  const out = walk(root, root, 0);
  out.type = SchemaType.OBJECT;
  out.properties ??= [];
  out.required ??= [];
  return out;
}
