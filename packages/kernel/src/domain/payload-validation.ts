// Validation of tool arguments and result payloads against a tool's (translated) schemas,
// compiled once per schema with ajv.
import type { JsonObject } from "@bufbuild/protobuf";
import { Ajv, type ValidateFunction } from "ajv";
import { argumentDepthProblem } from "./json-depth.ts";

export interface PayloadCheck {
  readonly ok: boolean;
  /** One line per failure, "<instance path> <message>", empty when ok. */
  readonly errors: readonly string[];
}

const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
const compiled = new WeakMap<JsonObject, ValidateFunction>();

function validatorOf(jsonSchema: JsonObject): ValidateFunction {
  let validate = compiled.get(jsonSchema);
  if (!validate) {
    validate = ajv.compile(jsonSchema);
    compiled.set(jsonSchema, validate);
  }
  return validate;
}

/**
 * Compiles a schema's validator ahead of its first use (a compile costs milliseconds;
 * callers do it while they wait anyway, e.g. while a tool runs). Never throws: a schema
 * that does not compile fails at its first check instead.
 */
export function precompilePayloadSchema(jsonSchema: JsonObject): void {
  try {
    validatorOf(jsonSchema);
  } catch {
    // reported by checkPayload when it is used
  }
}

/** Validates a JSON value against a subset JSON Schema (as produced by toJsonSchema). */
export function checkPayload(jsonSchema: JsonObject, payload: unknown): PayloadCheck {
  const validate = validatorOf(jsonSchema);
  if (validate(payload)) return { ok: true, errors: [] };
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
  return { ok: false, errors };
}

/**
 * Validates tool arguments (a model's, an operator's, a human's corrected input or
 * answer): first that they nest no deeper than the wire carries, then the schema.
 */
export function checkArguments(jsonSchema: JsonObject, args: unknown): PayloadCheck {
  const tooDeep = argumentDepthProblem(args);
  if (tooDeep) return { ok: false, errors: [`/ is ${tooDeep}`] };
  return checkPayload(jsonSchema, args);
}
