// A provider's agent.hcl block: the ConfigSchema it advertises and a reader that checks
// the decoded values against it, fills defaults and reports problems as diagnostics
// (never as RPC errors, and never quoting a sensitive value).
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import {
  AttributeType,
  type ConfigDiagnosticSchema,
  type ConfigSchemaSchema,
  DiagnosticSeverity,
} from "@pluggableharness/protocol/config";

export type ConfigFieldType = "string" | "number" | "bool" | "list_string" | "list_number" | "map_string";

export interface ConfigField {
  name: string;
  type: ConfigFieldType;
  description: string;
  required?: boolean;
  sensitive?: boolean;
  /** Value used when the attribute is omitted (never on sensitive fields). */
  default?: JsonValue;
  /**
   * A path or list of paths: the kernel resolves relative values against the directory of
   * agent.hcl, so Configure receives absolute ones.
   */
  path?: boolean;
}

export type Diagnostic = MessageInitShape<typeof ConfigDiagnosticSchema>;

/**
 * The `roots` attribute a provider confines itself with: a list of directories, relative
 * ones taken from the directory of agent.hcl. `description` says what they bound here.
 */
export function rootsField(description: string, options: { required?: boolean } = {}): ConfigField {
  return {
    name: "roots",
    type: "list_string",
    ...(options.required ? { required: true } : {}),
    path: true,
    description,
  };
}

const ATTRIBUTE_TYPES: Record<ConfigFieldType, AttributeType> = {
  string: AttributeType.STRING,
  number: AttributeType.NUMBER,
  bool: AttributeType.BOOL,
  list_string: AttributeType.LIST_STRING,
  list_number: AttributeType.LIST_NUMBER,
  map_string: AttributeType.MAP_STRING,
};

export function configSchema(fields: readonly ConfigField[]): MessageInitShape<typeof ConfigSchemaSchema> {
  return {
    attributes: fields.map((f) => ({
      name: f.name,
      type: ATTRIBUTE_TYPES[f.type],
      required: f.required === true,
      sensitive: f.sensitive === true,
      description: f.description,
      ...(f.path ? { path: true } : {}),
      ...(f.default !== undefined && !f.sensitive ? { defaultJson: JSON.stringify(f.default) } : {}),
    })),
  };
}

export function configError(path: readonly string[], summary: string, detail = ""): Diagnostic {
  return { severity: DiagnosticSeverity.ERROR, attributePath: [...path], summary, detail };
}

/**
 * A whole-number setting of at least `min`: records the problem when it is not one and
 * returns the value as given either way (Configure refuses on any problem).
 */
export function integerAtLeast(
  values: JsonObject,
  problems: Diagnostic[],
  name: string,
  min: number,
): number {
  const v = values[name] as number;
  if (!Number.isInteger(v) || v < min)
    problems.push(configError([name], `${name} must be an integer of at least ${min}`));
  return v;
}

export function configWarning(path: readonly string[], summary: string, detail = ""): Diagnostic {
  return { severity: DiagnosticSeverity.WARNING, attributePath: [...path], summary, detail };
}

function matches(type: ConfigFieldType, v: JsonValue): boolean {
  switch (type) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    case "bool":
      return typeof v === "boolean";
    case "list_string":
      return Array.isArray(v) && v.every((x) => typeof x === "string");
    case "list_number":
      return Array.isArray(v) && v.every((x) => typeof x === "number");
    case "map_string":
      return (
        v !== null &&
        typeof v === "object" &&
        !Array.isArray(v) &&
        Object.values(v).every((x) => typeof x === "string")
      );
  }
}

/**
 * Checks `values` against `fields`: missing required attributes, wrong types and
 * unknown attributes are errors. Returns the values with defaults filled in.
 */
export function readConfig(
  fields: readonly ConfigField[],
  values: JsonObject | undefined,
): { values: JsonObject; diagnostics: Diagnostic[] } {
  const input = values ?? {};
  const out: JsonObject = {};
  const diagnostics: Diagnostic[] = [];
  const known = new Set(fields.map((f) => f.name));
  for (const name of Object.keys(input)) {
    if (!known.has(name)) {
      diagnostics.push(
        configError([name], `Unsupported attribute "${name}"`, `Known attributes: ${[...known].join(", ")}.`),
      );
    }
  }
  for (const f of fields) {
    const v = input[f.name];
    if (v === undefined || v === null) {
      if (f.required) diagnostics.push(configError([f.name], `Missing required attribute "${f.name}"`));
      else if (f.default !== undefined) out[f.name] = f.default;
      continue;
    }
    if (!matches(f.type, v)) {
      diagnostics.push(
        configError(
          [f.name],
          `Attribute "${f.name}" must be a ${f.type.replace("_", " of ")}`,
          f.sensitive ? "" : `Got ${JSON.stringify(v).slice(0, 80)}.`,
        ),
      );
      continue;
    }
    out[f.name] = v;
  }
  return { values: out, diagnostics };
}
