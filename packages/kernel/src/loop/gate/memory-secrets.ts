// The kernel's rule for memory writes: a call to a tool served by a memory provider whose
// arguments hold the value of one of the environment's secrets (the variables withheld
// from commands, e.g. a vendor API key) is refused before policy, whatever policy or a
// human says. Memory is read back into every later session's prompt, so a secret written
// there would leak far beyond the turn that saw it. The plugin refuses well-known key
// shapes itself; only the kernel knows the actual values, and it looks for them in every
// encoding its SecretMask knows (a base64 or hex copy of a key is the key).
import type { JsonValue } from "@bufbuild/protobuf";
import type { SecretMask } from "@pluggableharness/config";
import type { LoopDeps } from "../deps.ts";
import type { CallRecord } from "./call.ts";

export const MEMORY_SECRETS_RULE = "kernel:memory_secrets";

export const MEMORY_SECRETS_REASON =
  "the arguments contain the value of a secret environment variable; memory never stores secrets";

function holds(v: JsonValue, mask: SecretMask): boolean {
  if (typeof v === "string") return mask.contains(v);
  if (Array.isArray(v)) return v.some((x) => holds(x, mask));
  if (v && typeof v === "object")
    return Object.entries(v).some(([k, x]) => mask.contains(k) || holds(x, mask));
  return false;
}

/** Whether the call writes memory and carries a secret value. */
export function memorySecretHit(deps: Pick<LoopDeps, "secretMask">, c: CallRecord): boolean {
  if (!c.tool?.provider.categories.has("memory") || deps.secretMask.empty) return false;
  return holds(c.args, deps.secretMask);
}
