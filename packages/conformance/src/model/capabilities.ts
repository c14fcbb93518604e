// Describe, GetCapabilities and Configure checks for model providers.
import { equals, type JsonObject } from "@bufbuild/protobuf";
import { CapabilitiesError, validateCapabilities } from "@pluggableharness/kernel/domain";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { type ConfigureResult, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type Capabilities, CapabilitiesSchema, ModelService } from "@pluggableharness/protocol/model";
import { checkCheapAndStable, checkIdentity } from "../common/checks.ts";
import type { CheckContext } from "../runner.ts";

/** A value no configuration would contain by accident; it must never come back. */
export const SECRET_CANARY = "conformance-canary-3b7e1f0a9d2c";

export async function checkDescribe(ctx: CheckContext): Promise<void> {
  checkIdentity(
    ctx,
    "model",
    (await ctx.host.client(ModelService).describe({})).producer,
    PluginCategory.MODEL,
  );
}

/** Runs before Configure: a catalog must not need credentials or the network. */
export async function checkCapabilities(ctx: CheckContext): Promise<Capabilities | undefined> {
  const client = ctx.host.client(ModelService);
  const first = await checkCheapAndStable(
    ctx,
    "model",
    async () => (await client.getCapabilities({})).capabilities,
    (a, b) => equals(CapabilitiesSchema, a, b),
  );
  if (!first) {
    ctx.record("model.capabilities.valid", "fail", "GetCapabilities returned no capabilities");
    return undefined;
  }
  try {
    const v = validateCapabilities("conformance", first);
    const warnings = v.warnings.map((w) => `${w.message} [${w.rule}]`);
    // A provider whose models come from its configuration (an OpenAI-compatible server)
    // has none before Configure; its catalog is validated after Configure instead.
    ctx.record(
      "model.capabilities.valid",
      first.models.length === 0 ? "warn" : warnings.length ? "warn" : "pass",
      first.models.length === 0
        ? "no built-in model; the catalog declared by Configure is checked after it"
        : warnings.length
          ? warnings.join("; ")
          : `${first.models.length} models: ${first.models.map((m) => m.id).join(", ")}`,
    );
  } catch (err) {
    if (!(err instanceof CapabilitiesError)) throw err;
    ctx.record(
      "model.capabilities.valid",
      "fail",
      err.violations.map((v) => `${v.message} [${v.rule}]`).join("; "),
    );
  }
  const schema = first.configSchema;
  const leaky = (schema?.attributes ?? []).filter((a) => a.sensitive && a.defaultJson !== undefined);
  ctx.record(
    "model.capabilities.config_schema",
    !schema ? "fail" : leaky.length ? "fail" : "pass",
    !schema
      ? "no config_schema"
      : leaky.length
        ? `sensitive attributes with a default: ${leaky.map((a) => a.name).join(", ")}`
        : `${schema.attributes.length} attributes (${schema.attributes.filter((a) => a.sensitive).length} sensitive)`,
  );
  return first;
}

/** The catalog after Configure, validated when the built-in one was empty. */
export function checkConfiguredCatalog(ctx: CheckContext, before: Capabilities, after: Capabilities): void {
  if (before.models.length > 0) return;
  if (after.models.length === 0) {
    ctx.record("model.capabilities.configured", "fail", "no model declared, before or after Configure");
    return;
  }
  try {
    validateCapabilities("conformance", after);
    ctx.record(
      "model.capabilities.configured",
      "pass",
      `Configure declared ${after.models.length} models: ${after.models.map((m) => m.id).join(", ")}`,
    );
  } catch (err) {
    if (!(err instanceof CapabilitiesError)) throw err;
    ctx.record(
      "model.capabilities.configured",
      "fail",
      err.violations.map((v) => `${v.message} [${v.rule}]`).join("; "),
    );
  }
}

const errorsOf = (r: ConfigureResult | undefined) =>
  (r?.diagnostics ?? []).filter((d) => d.severity === DiagnosticSeverity.ERROR);

/**
 * Configure with nothing must be rejected in-band when anything is required, and a
 * rejection must not repeat the secret it was given. Ends with the real configuration.
 */
export async function checkConfigure(ctx: CheckContext, caps: Capabilities | undefined): Promise<boolean> {
  const client = ctx.host.client(ModelService);
  const attrs = caps?.configSchema?.attributes ?? [];
  const required = attrs.filter((a) => a.required);
  if (required.length > 0) {
    const empty = await client.configure({ config: {} });
    const errs = errorsOf(empty.result);
    const named = required.every((a) => errs.some((d) => d.attributePath[0] === a.name));
    ctx.record(
      "model.configure.missing_required",
      errs.length > 0 ? (named ? "pass" : "warn") : "fail",
      errs.length === 0
        ? `an empty configuration was accepted although ${required.map((a) => a.name).join(", ")} are required`
        : named
          ? `rejected with ${errs.length} error diagnostics naming every required attribute`
          : "rejected, but not every missing attribute is named in an attribute_path",
    );
  } else ctx.record("model.configure.missing_required", "skip", "no attribute is required");

  const sensitive = attrs.filter((a) => a.sensitive);
  if (sensitive.length > 0) {
    // Only the secrets, with the canary, and an attribute no provider declares.
    const probe: JsonObject = { conformance_unknown_attribute: SECRET_CANARY };
    for (const a of sensitive) probe[a.name] = SECRET_CANARY;
    const res = await client.configure({ config: probe });
    const leaked = JSON.stringify(res.result ?? {}).includes(SECRET_CANARY);
    ctx.record(
      "model.configure.no_echo",
      leaked ? "fail" : "pass",
      leaked
        ? "a Configure diagnostic repeats a received value"
        : "diagnostics never repeat a received value",
    );
  } else ctx.record("model.configure.no_echo", "skip", "no sensitive attribute");

  const res = await client.configure({ config: ctx.config });
  const errs = errorsOf(res.result);
  ctx.record(
    "model.configure.accepted",
    errs.length ? "fail" : "pass",
    errs.length
      ? `the given configuration was rejected: ${errs.map((d) => `${d.attributePath.join(".")}: ${d.summary}`).join("; ")}`
      : "the given configuration was accepted",
  );
  return errs.length === 0;
}
