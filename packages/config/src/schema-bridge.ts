// The schema bridge: decodes an undecoded `provider "<name>" { ... }` body against
// the ConfigSchema the plugin advertised, into the plain JSON object Configure
// receives (a google.protobuf.Struct on the wire).
//
// This path handles resolved secrets in memory and therefore logs nothing.
// Diagnostics name attributes, variables and types, never values.

import { resolve as resolvePath } from "node:path";
import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { Struct } from "@bufbuild/protobuf/wkt";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import {
  type Body,
  type Expression,
  envFunction,
  evaluate,
  formatNumber,
  type HclFunction,
  isObject,
  type Range,
  type Value,
} from "@pluggableharness/hcl";
import { AttributeType } from "@pluggableharness/protocol/config";
import { describe, objectEntries } from "./decode.ts";
import { type ConfigDiagnostic, ConfigError, errorAt, fromHcl, hasErrors } from "./diagnostics.ts";
import type { AgentConfig } from "./model.ts";
import { type Environment, envShape, resolveEnv, scrub } from "./secrets.ts";

/** Structural view of config.v1.ConfigAttribute (the generated message satisfies it). */
export interface SchemaAttribute {
  name: string;
  type: AttributeType;
  required: boolean;
  sensitive: boolean;
  description?: string;
  objectAttributes: readonly SchemaAttribute[];
  defaultJson?: string | undefined;
  /** A path (string) or paths (list(string)); relative ones resolve against the agent.hcl directory. */
  path?: boolean;
}

export interface SchemaLike {
  attributes: readonly SchemaAttribute[];
}

export interface DecodedProviderConfig {
  /** The Configure payload, resolved secrets included. Attributes in schema order. */
  values: JsonObject;
  /** Paths (e.g. ["auth", "token"]) of sensitive attributes, for redaction by callers. */
  sensitivePaths: string[][];
}

export type DecodeResult =
  | { ok: true; config: DecodedProviderConfig }
  | { ok: false; diagnostics: ConfigDiagnostic[] };

const TYPE_NAMES: Record<number, string> = {
  [AttributeType.STRING]: "string",
  [AttributeType.NUMBER]: "number",
  [AttributeType.BOOL]: "bool",
  [AttributeType.LIST_STRING]: "list(string)",
  [AttributeType.LIST_NUMBER]: "list(number)",
  [AttributeType.MAP_STRING]: "map(string)",
  [AttributeType.OBJECT]: "object",
};

const SCALAR = new Set<number>([AttributeType.STRING, AttributeType.NUMBER, AttributeType.BOOL]);
const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Checks a plugin's ConfigSchema itself; problems are the plugin's fault but
 * still stop loading. `at` is where they are reported (the provider block).
 */
export function validateConfigSchema(schema: SchemaLike, provider: string, at: Range): ConfigDiagnostic[] {
  const diags: ConfigDiagnostic[] = [];
  const bad = (path: string, detail: string) =>
    diags.push(
      errorAt(
        "schema",
        `Provider "${provider}" advertised an invalid configuration schema`,
        `${path}: ${detail}`,
        at,
      ),
    );
  const walk = (attrs: readonly SchemaAttribute[], prefix: string) => {
    const seen = new Set<string>();
    for (const a of attrs) {
      const path = prefix === "" ? a.name : `${prefix}.${a.name}`;
      if (!NAME.test(a.name)) bad(path || "(empty name)", "attribute names must be identifiers");
      if (seen.has(a.name)) bad(path, "declared twice");
      seen.add(a.name);
      const typeName = TYPE_NAMES[a.type];
      if (typeName === undefined) {
        bad(path, "has no (or an unknown) type");
        continue;
      }
      const isObjectType = a.type === AttributeType.OBJECT;
      if (isObjectType && a.objectAttributes.length === 0)
        bad(path, "an object attribute needs object_attributes");
      if (!isObjectType && a.objectAttributes.length > 0) {
        bad(path, `object_attributes is only allowed on object attributes, not ${typeName}`);
      }
      if (a.path && a.type !== AttributeType.STRING && a.type !== AttributeType.LIST_STRING) {
        bad(path, `path is only supported on string and list(string) attributes, not ${typeName}`);
      }
      if (a.sensitive && !SCALAR.has(a.type)) {
        bad(path, `sensitive is only supported on string, number and bool attributes, not ${typeName}`);
      }
      if (a.defaultJson !== undefined) {
        if (a.sensitive) bad(path, "a sensitive attribute cannot declare default_json");
        else if (a.required)
          bad(path, "a required attribute cannot declare default_json (it would never apply)");
        else {
          let parsed: unknown;
          try {
            parsed = JSON.parse(a.defaultJson);
          } catch {
            bad(path, "default_json is not valid JSON");
            parsed = undefined;
          }
          if (parsed !== undefined) {
            const why = defaultShapeError(parsed as JsonValue, a);
            if (why !== undefined) bad(path, `default_json does not match type ${typeName}: ${why}`);
          }
        }
      }
      if (isObjectType) walk(a.objectAttributes, path);
    }
  };
  walk(schema.attributes, "");
  return diags;
}

/** Why a default value does not have the attribute's shape, or undefined when it does. */
function defaultShapeError(v: JsonValue, a: SchemaAttribute): string | undefined {
  switch (a.type) {
    case AttributeType.STRING:
      return typeof v === "string" ? undefined : `expected a JSON string, got ${jsonType(v)}`;
    case AttributeType.NUMBER:
      return typeof v === "number" ? undefined : `expected a JSON number, got ${jsonType(v)}`;
    case AttributeType.BOOL:
      return typeof v === "boolean" ? undefined : `expected a JSON boolean, got ${jsonType(v)}`;
    case AttributeType.LIST_STRING:
      return Array.isArray(v) && v.every((x) => typeof x === "string")
        ? undefined
        : "expected a JSON array of strings";
    case AttributeType.LIST_NUMBER:
      return Array.isArray(v) && v.every((x) => typeof x === "number")
        ? undefined
        : "expected a JSON array of numbers";
    case AttributeType.MAP_STRING:
      return isJsonObject(v) && Object.values(v).every((x) => typeof x === "string")
        ? undefined
        : "expected a JSON object of strings";
    case AttributeType.OBJECT: {
      if (!isJsonObject(v)) return `expected a JSON object, got ${jsonType(v)}`;
      const nested = new Map(a.objectAttributes.map((n) => [n.name, n]));
      for (const [k, x] of Object.entries(v)) {
        const n = nested.get(k);
        if (n === undefined) return `unknown key "${k}"`;
        const why = defaultShapeError(x as JsonValue, n);
        if (why !== undefined) return `${k}: ${why}`;
      }
      return undefined;
    }
    default:
      return "unknown type";
  }
}

function isJsonObject(v: JsonValue): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function jsonType(v: JsonValue): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** The zero value (or declared default) of an omitted optional attribute. */
function absentValue(a: SchemaAttribute): JsonValue {
  if (a.defaultJson !== undefined) return JSON.parse(a.defaultJson) as JsonValue;
  switch (a.type) {
    case AttributeType.STRING:
      return "";
    case AttributeType.NUMBER:
      return 0;
    case AttributeType.BOOL:
      return false;
    case AttributeType.LIST_STRING:
    case AttributeType.LIST_NUMBER:
      return [];
    case AttributeType.MAP_STRING:
      return {};
    default: {
      const out: JsonObject = {};
      for (const n of a.objectAttributes) out[n.name] = absentValue(n);
      return out;
    }
  }
}

/** One written entry of a body or object constructor. */
interface Item {
  name: string;
  nameRange: Range;
  expr?: Expression;
  body?: Body;
}

class Decoder {
  readonly diags: ConfigDiagnostic[] = [];
  readonly resolved = new Set<string>();
  readonly sensitivePaths: string[][] = [];
  private readonly env: Environment;
  private readonly envFn: HclFunction;
  private readonly provider: string;
  /** Where relative path attributes resolve (the directory of agent.hcl). */
  private readonly baseDir: string | undefined;

  constructor(env: Environment, provider: string, baseDir?: string) {
    this.env = env;
    this.provider = provider;
    this.baseDir = baseDir;
    const inner = envFunction(env);
    // Remember every value read from the environment so diagnostics can be scrubbed.
    this.envFn = (args, call) => {
      const v = inner(args, call);
      if (typeof v === "string") this.resolved.add(v);
      return v;
    };
  }

  bodyItems(body: Body): Item[] {
    return body.items.map((i) =>
      i.kind === "Attribute"
        ? { name: i.name, nameRange: i.nameRange, expr: i.expr }
        : (() => {
            if (i.labels.length > 0) {
              this.diags.push(
                errorAt(
                  "syntax",
                  "Unexpected block label",
                  `A "${i.type}" block takes no labels.`,
                  i.labels[0]!.range,
                ),
              );
            }
            return { name: i.type, nameRange: i.typeRange, body: i.body };
          })(),
    );
  }

  decode(attrs: readonly SchemaAttribute[], items: Item[], owner: Range, path: string[]): JsonObject {
    const bySchema = new Map(attrs.map((a) => [a.name, a]));
    const written = new Map<string, Item>();
    for (const item of items) {
      const where = [...path, item.name].join(".");
      if (!bySchema.has(item.name)) {
        const known = attrs.map((a) => `"${a.name}"`).join(", ");
        this.diags.push(
          errorAt(
            "unknown_attribute",
            "Unsupported argument",
            `Provider "${this.provider}" does not accept "${where}".${known === "" ? " It takes no configuration." : ` Accepted here: ${known}.`}`,
            item.nameRange,
          ),
        );
        continue;
      }
      const first = written.get(item.name);
      if (first !== undefined) {
        this.diags.push(
          errorAt(
            "duplicate",
            "Duplicate argument",
            `"${where}" is set twice; the first is at line ${first.nameRange.start.line}.`,
            item.nameRange,
          ),
        );
        continue;
      }
      written.set(item.name, item);
    }
    const out: JsonObject = {};
    for (const a of attrs) {
      const item = written.get(a.name);
      const here = [...path, a.name];
      const before = this.diags.length;
      const value = item === undefined ? undefined : this.attribute(a, item, here);
      if (value !== undefined) {
        out[a.name] = value;
        continue;
      }
      if (this.diags.length > before) continue; // failed; the diagnostic is recorded
      if (a.required) {
        this.diags.push(
          errorAt(
            "missing_attribute",
            "Missing required argument",
            `Provider "${this.provider}" requires "${here.join(".")}" (${TYPE_NAMES[a.type] ?? "?"}).`,
            item?.nameRange ?? owner,
          ),
        );
        continue;
      }
      const absent = absentValue(a);
      out[a.name] = a.path ? (this.absolute(absent) ?? absent) : absent;
    }
    return out;
  }

  /** The decoded value, or undefined when written as null or on error. */
  private attribute(a: SchemaAttribute, item: Item, path: string[]): JsonValue | undefined {
    const where = path.join(".");
    if (a.sensitive) {
      this.sensitivePaths.push(path);
      if (item.expr === undefined) {
        this.diags.push(
          errorAt(
            "secret_literal",
            `"${where}" must be exactly env("NAME")`,
            "It is written as a block.",
            item.nameRange,
          ),
        );
        return undefined;
      }
      const shape = envShape(item.expr, `Sensitive attribute "${where}"`);
      if ("diagnostic" in shape) {
        this.diags.push(shape.diagnostic);
        return undefined;
      }
      const got = resolveEnv(shape.name, this.env, item.expr);
      if ("diagnostic" in got) {
        this.diags.push(got.diagnostic);
        return undefined;
      }
      this.resolved.add(got.value);
      return this.secretScalar(a, got.value, shape.name, where, item.expr.range);
    }
    if (a.type === AttributeType.OBJECT) {
      if (item.body !== undefined)
        return this.decode(a.objectAttributes, this.bodyItems(item.body), item.nameRange, path);
      const expr = item.expr!;
      if (expr.kind === "Null") return undefined;
      const entries = objectEntries(expr, `"${where}"`, this.diags);
      if (entries === undefined) return undefined;
      const items = entries.map((e) => ({ name: e.key, nameRange: e.keyRange, expr: e.value }));
      return this.decode(a.objectAttributes, items, expr.range, path);
    }
    if (item.expr === undefined) {
      this.diags.push(
        errorAt(
          "type",
          "Unexpected block",
          `"${where}" is ${TYPE_NAMES[a.type]}: write "${a.name} = ..." instead of a block.`,
          item.nameRange,
        ),
      );
      return undefined;
    }
    const r = evaluate(item.expr, {
      functions: { env: this.envFn },
      ...(this.baseDir !== undefined ? { variables: { path: { root: this.baseDir } } } : {}),
    });
    for (const d of r.diagnostics) this.diags.push(fromHcl(d, "eval"));
    if (r.value === undefined || r.value === null) return undefined;
    const value = this.convert(r.value, a, where, item.expr.range);
    return a.path ? this.absolute(value) : value;
  }

  /** A path attribute's value with each relative path resolved against the agent.hcl directory. */
  private absolute(value: JsonValue | undefined): JsonValue | undefined {
    const base = this.baseDir;
    if (base === undefined) return value;
    const fix = (p: JsonValue): JsonValue => (typeof p === "string" && p !== "" ? resolvePath(base, p) : p);
    return Array.isArray(value) ? value.map(fix) : value === undefined ? undefined : fix(value);
  }

  private secretScalar(a: SchemaAttribute, raw: string, envName: string, where: string, range: Range) {
    if (a.type === AttributeType.STRING) return raw;
    if (a.type === AttributeType.NUMBER) {
      if (/^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(raw)) return Number(raw);
      this.diags.push(
        errorAt(
          "type",
          "Incorrect value type",
          `"${where}" is a number, but ${envName} does not hold one.`,
          range,
        ),
      );
      return undefined;
    }
    if (raw === "true" || raw === "false") return raw === "true";
    this.diags.push(
      errorAt(
        "type",
        "Incorrect value type",
        `"${where}" is a bool, but ${envName} holds neither "true" nor "false".`,
        range,
      ),
    );
    return undefined;
  }

  private convert(v: Value, a: SchemaAttribute, where: string, range: Range): JsonValue | undefined {
    const fail = (expected: string, got: Value) => {
      this.diags.push(
        errorAt(
          "type",
          "Incorrect value type",
          `"${where}" must be ${expected}, not ${describe(got)}.`,
          range,
        ),
      );
      return undefined;
    };
    const str = (x: Value): string | undefined =>
      typeof x === "string"
        ? x
        : typeof x === "number"
          ? formatNumber(x)
          : typeof x === "boolean"
            ? String(x)
            : undefined;
    const num = (x: Value): number | undefined =>
      typeof x === "number"
        ? x
        : typeof x === "string" && /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(x)
          ? Number(x)
          : undefined;
    switch (a.type) {
      case AttributeType.STRING:
        return str(v) ?? fail("a string", v);
      case AttributeType.NUMBER:
        return num(v) ?? fail("a number", v);
      case AttributeType.BOOL:
        if (typeof v === "boolean") return v;
        if (v === "true" || v === "false") return v === "true";
        return fail("a bool", v);
      case AttributeType.LIST_STRING: {
        if (!Array.isArray(v)) return fail("a list of strings", v);
        const out = v.map(str);
        const bad = out.indexOf(undefined);
        return bad < 0 ? (out as string[]) : fail("a list of strings", v[bad]!);
      }
      case AttributeType.LIST_NUMBER: {
        if (!Array.isArray(v)) return fail("a list of numbers", v);
        const out = v.map(num);
        const bad = out.indexOf(undefined);
        return bad < 0 ? (out as number[]) : fail("a list of numbers", v[bad]!);
      }
      case AttributeType.MAP_STRING: {
        if (!isObject(v)) return fail("a map of strings", v);
        const out: JsonObject = {};
        for (const [k, x] of Object.entries(v)) {
          const s = str(x);
          if (s === undefined) return fail("a map of strings", x);
          out[k] = s;
        }
        return out;
      }
      default:
        return fail("a supported type", v);
    }
  }
}

/**
 * Decodes a provider body (undefined: the provider has no block) against its
 * schema. `at` positions problems that have no source of their own (schema
 * errors, required attributes of an absent block).
 */
export function decodeProviderBody(
  body: Body | undefined,
  schema: SchemaLike,
  options: { provider: string; at: Range; env?: Environment; baseDir?: string },
): DecodeResult {
  const schemaDiags = validateConfigSchema(schema, options.provider, options.at);
  if (schemaDiags.length > 0) return { ok: false, diagnostics: schemaDiags };
  const decoder = new Decoder(options.env ?? process.env, options.provider, options.baseDir);
  const items = body === undefined ? [] : decoder.bodyItems(body);
  const values = decoder.decode(schema.attributes, items, options.at, []);
  if (hasErrors(decoder.diags)) {
    return { ok: false, diagnostics: scrub(decoder.diags, decoder.resolved) };
  }
  return { ok: true, config: { values, sensitivePaths: decoder.sensitivePaths } };
}

/** Decodes the block of required provider `localName` from a loaded configuration. */
export function decodeProviderConfig(
  config: AgentConfig,
  localName: string,
  schema: SchemaLike,
  env: Environment = process.env,
): DecodeResult {
  const block = config.providers.find((p) => p.name === localName);
  const required = config.requiredProviders.find((r) => r.localName === localName);
  const at = block?.block.labels[0]?.range ?? required?.range;
  if (at === undefined) {
    return {
      ok: false,
      diagnostics: [
        {
          severity: "error",
          category: "unknown_provider",
          summary: "Unknown provider",
          detail: `"${localName}" is not declared in required_providers.`,
          file: config.file,
          line: 1,
          column: 1,
        },
      ],
    };
  }
  return decodeProviderBody(block?.body, schema, {
    provider: localName,
    at,
    env,
    baseDir: config.projectDir,
  });
}

/** Like decodeProviderConfig, but throws a ConfigError (free of secret values) on failure. */
export function decodeProviderConfigOrThrow(
  config: AgentConfig,
  localName: string,
  schema: SchemaLike,
  env: Environment = process.env,
): DecodedProviderConfig {
  const r = decodeProviderConfig(config, localName, schema, env);
  if (!r.ok) throw new ConfigError(r.diagnostics, `configuration of provider "${localName}"`);
  return r.config;
}

/** The Configure payload as a google.protobuf.Struct. */
export function toStruct(values: JsonObject): Struct {
  return fromJson(StructSchema, values);
}

/** A copy of decoded values with every sensitive path replaced by "(sensitive)", for display. */
export function redactedValues(config: DecodedProviderConfig): JsonObject {
  const copy = structuredClone(config.values);
  for (const path of config.sensitivePaths) {
    let node: JsonValue = copy;
    for (const key of path.slice(0, -1)) {
      node = isJsonObject(node) ? (node[key] ?? null) : null;
    }
    const last = path[path.length - 1]!;
    if (isJsonObject(node) && Object.hasOwn(node, last)) node[last] = "(sensitive)";
  }
  return copy;
}
