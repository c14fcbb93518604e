// Validation of tool arguments and result payloads against a tool's (translated) schemas,
// compiled once per schema with ajv.
import type { JsonObject } from "@bufbuild/protobuf";
import { Ajv, type ValidateFunction } from "ajv";

export interface PayloadCheck {
  readonly ok: boolean;
  /** One line per failure, "<instance path> <message>", empty when ok. */
  readonly errors: readonly string[];
}

const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
const compiled = new WeakMap<JsonObject, ValidateFunction>();

/** Validates a JSON value against a subset JSON Schema (as produced by toJsonSchema). */
export function checkPayload(jsonSchema: JsonObject, payload: unknown): PayloadCheck {
  let validate = compiled.get(jsonSchema);
  if (!validate) {
    validate = ajv.compile(jsonSchema);
    compiled.set(jsonSchema, validate);
  }
  if (validate(payload)) return { ok: true, errors: [] };
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
  return { ok: false, errors };
}
