// The kernel's rule for memory writes: a call to a tool served by a memory provider whose
// arguments hold the value of one of the environment's secrets (the variables withheld
// from commands, e.g. a vendor API key) is refused before policy, whatever policy or a
// human says. Memory is read back into every later session's prompt, so a secret written
// there would leak far beyond the turn that saw it. The plugin refuses well-known key
// shapes itself; only the kernel knows the actual values.
import type { JsonValue } from "@bufbuild/protobuf";
import type { LoopDeps } from "../deps.ts";
import type { CallRecord } from "./call.ts";

export const MEMORY_SECRETS_RULE = "kernel:memory_secrets";

export const MEMORY_SECRETS_REASON =
  "the arguments contain the value of a secret environment variable; memory never stores secrets";

function holds(v: JsonValue, secrets: readonly string[]): boolean {
  if (typeof v === "string") return secrets.some((s) => v.includes(s));
  if (Array.isArray(v)) return v.some((x) => holds(x, secrets));
  if (v && typeof v === "object") return Object.values(v).some((x) => holds(x, secrets));
  return false;
}

/** Whether the call writes memory and carries a secret value. */
export function memorySecretHit(deps: Pick<LoopDeps, "secretValues">, c: CallRecord): boolean {
  if (!c.tool?.provider.categories.has("memory") || deps.secretValues.length === 0) return false;
  return holds(c.args, deps.secretValues);
}
