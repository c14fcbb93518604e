// A provider's configuration: the attributes it declares (sent in GetCapabilities as a
// ConfigSchema) and the checks Configure runs on the decoded provider block. Diagnostics
// name attributes and say what is wrong; they never repeat a received value, so a secret
// pasted into the wrong attribute cannot leak through them either.
import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { SecretMask } from "@pluggableharness/config/secret-mask";
import {
  AttributeType,
  type ConfigDiagnostic,
  ConfigDiagnosticSchema,
  type ConfigSchema,
  ConfigSchemaSchema,
  DiagnosticSeverity,
} from "@pluggableharness/protocol/config";

export type AttributeKind = "string" | "number" | "bool" | "list_string" | "map_string";

export interface AttributeDef {
  name: string;
  kind: AttributeKind;
  description: string;
  required?: boolean;
  /** Sensitive values must come from env("NAME") in agent.hcl and are never echoed. */
  sensitive?: boolean;
  /** Applied when the attribute is omitted (never on sensitive attributes). */
  default?: JsonValue;
  /** Extra check on a present, well-typed value; returns a problem description. */
  check?: (value: JsonValue) => string | undefined;
}

const TYPE: Record<AttributeKind, AttributeType> = {
  string: AttributeType.STRING,
  number: AttributeType.NUMBER,
  bool: AttributeType.BOOL,
  list_string: AttributeType.LIST_STRING,
  map_string: AttributeType.MAP_STRING,
};

export function configSchema(attributes: readonly AttributeDef[]): ConfigSchema {
  return create(ConfigSchemaSchema, {
    attributes: attributes.map((a) => ({
      name: a.name,
      type: TYPE[a.kind],
      required: a.required ?? false,
      sensitive: a.sensitive ?? false,
      description: a.description,
      ...(a.default !== undefined && !a.sensitive ? { defaultJson: JSON.stringify(a.default) } : {}),
    })),
  });
}

export function diagnostic(
  severity: "error" | "warning",
  path: readonly string[],
  summary: string,
  detail = "",
): ConfigDiagnostic {
  return create(ConfigDiagnosticSchema, {
    severity: severity === "error" ? DiagnosticSeverity.ERROR : DiagnosticSeverity.WARNING,
    attributePath: [...path],
    summary,
    detail,
  });
}

/** A host on this machine: localhost, *.localhost, 127.0.0.0/8 or ::1. */
export function isLoopback(baseUrl: string): boolean {
  try {
    const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, "");
    return host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127\./.test(host);
  } catch {
    return false;
  }
}

/** Plain http to another machine: a key sent there travels unencrypted. */
export function plainHttpRemote(baseUrl: string): boolean {
  return baseUrl.startsWith("http://") && !isLoopback(baseUrl);
}

/** A warning when `base_url` sends the key in clear text to another machine. */
export function plainHttpWarning(baseUrl: unknown): ConfigDiagnostic | undefined {
  if (typeof baseUrl !== "string" || !plainHttpRemote(baseUrl)) return undefined;
  return diagnostic(
    "warning",
    ["base_url"],
    "base_url is plain http to another host",
    "The API key would travel unencrypted.",
  );
}

export function hasErrors(diagnostics: readonly ConfigDiagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === DiagnosticSeverity.ERROR);
}

function typeProblem(kind: AttributeKind, v: JsonValue): string | undefined {
  switch (kind) {
    case "string":
      return typeof v === "string" ? undefined : "must be a string";
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? undefined : "must be a number";
    case "bool":
      return typeof v === "boolean" ? undefined : "must be true or false";
    case "list_string":
      return Array.isArray(v) && v.every((x) => typeof x === "string")
        ? undefined
        : "must be a list of strings";
    case "map_string":
      return v !== null &&
        typeof v === "object" &&
        !Array.isArray(v) &&
        Object.values(v).every((x) => typeof x === "string")
        ? undefined
        : "must be a map of strings";
  }
}

export interface ParsedConfig {
  /** Every declared attribute: the given value, else its default; absent when neither. */
  values: Record<string, JsonValue>;
  diagnostics: ConfigDiagnostic[];
  /** Values of sensitive attributes, for redaction. */
  secrets: string[];
}

/**
 * Checks a decoded provider block against the declared attributes: unknown attributes,
 * missing required ones (an empty string counts as missing), wrong types and each
 * attribute's own check. Values are never quoted back.
 */
export function parseConfig(
  attributes: readonly AttributeDef[],
  config: JsonObject | undefined,
): ParsedConfig {
  const given = config ?? {};
  const values: Record<string, JsonValue> = {};
  const diagnostics: ConfigDiagnostic[] = [];
  const secrets: string[] = [];
  const known = new Set(attributes.map((a) => a.name));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) {
      diagnostics.push(
        diagnostic(
          "error",
          [name],
          `Unsupported attribute "${name}"`,
          `This provider accepts: ${[...known].sort().join(", ")}.`,
        ),
      );
    }
  }
  for (const a of attributes) {
    const raw = given[a.name];
    const present = raw !== undefined && raw !== null && !(typeof raw === "string" && raw === "");
    if (!present) {
      if (a.required) {
        const how = a.sensitive ? ` Set it with ${a.name} = env("…") in the provider block.` : "";
        diagnostics.push(
          diagnostic("error", [a.name], `Missing required attribute "${a.name}"`, `${a.description}${how}`),
        );
      } else if (a.default !== undefined) {
        values[a.name] = a.default;
      }
      continue;
    }
    const problem = typeProblem(a.kind, raw) ?? a.check?.(raw);
    if (problem) {
      diagnostics.push(
        diagnostic("error", [a.name], `Invalid value for "${a.name}"`, `"${a.name}" ${problem}.`),
      );
      continue;
    }
    values[a.name] = raw;
    if (a.sensitive && typeof raw === "string") secrets.push(raw);
  }
  return { values, diagnostics, secrets };
}

/** A check for base-URL attributes: absolute http(s), no credentials, query or fragment. */
export function checkBaseUrl(value: JsonValue): string | undefined {
  if (typeof value !== "string") return "must be a string";
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return "must be an absolute URL such as https://api.example.com";
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return "must use http or https";
  if (u.username || u.password) return "must not contain credentials; use the api_key attribute";
  if (u.search || u.hash) return "must not contain a query string or fragment";
  return undefined;
}

/**
 * Replaces every occurrence of each secret with a marker: literally from 4 characters, and
 * in the encodings SecretMask knows (base64, hex, percent-encoding, JSON escapes, reversed)
 * from 8 — a vendor error may echo the key in a URL, a header or a JSON body.
 */
export function makeRedactor(secrets: readonly string[]): (text: string) => string {
  const mask = new SecretMask(secrets, { minLiteral: 4 });
  if (mask.empty) return (t) => t;
  return (text) => mask.mask(text);
}
