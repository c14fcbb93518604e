// Checks every category shares: the Describe identity, a cheap and stable capability
// answer, a sane configuration schema, Configure's in-band diagnostics, classified gRPC
// failures and the plugin's health at the end. Each records under the category's prefix.
import { equals, type JsonObject, type Message } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import { PluginCategory, type ProducerRef } from "@pluggableharness/protocol/common";
import {
  type ConfigSchema,
  type ConfigureResult,
  DiagnosticSeverity,
} from "@pluggableharness/protocol/config";
import { StatusCode } from "@pluggableharness/protocol/status-codes";
import type { CheckContext } from "../runner.ts";

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
/** A capability answer needs no network, so it comes back quickly. */
const CAPABILITIES_BUDGET_MS = 1_000;
/** A value no configuration holds by accident; it must never come back. */
export const CONFIG_CANARY = "conformance-canary-5e2a9c71b04d";

/** A category's service client, as far as the opening checks call it. */
export interface OpeningClient<C> {
  describe(req: object): Promise<{ producer?: ProducerRef | undefined }>;
  getCapabilities(req: object): Promise<{ capabilities?: C | undefined }>;
  configure(req: { config: JsonObject }): Promise<{ result?: ConfigureResult | undefined }>;
}

/** What the opening checks of a category need: its service client and its own rules. */
export interface Opening<C extends Message & { configSchema?: ConfigSchema | undefined }> {
  readonly category: PluginCategory;
  readonly client: OpeningClient<C>;
  /** Two capability answers are the same when this schema finds them equal. */
  readonly capabilitiesSchema: GenMessage<C>;
  /** The category's own checks of its capabilities. */
  declarations(caps: C): void;
  /** Checks between the schema and Configure (the frontend's in-band refusal). */
  beforeConfigure?(): Promise<void>;
}

/**
 * The opening every category shares: identity, a cheap and stable capability answer, the
 * category's declarations, the configuration schema, then Configure. Returns the
 * capabilities and whether the configuration was accepted.
 */
export async function checkOpening<C extends Message & { configSchema?: ConfigSchema | undefined }>(
  ctx: CheckContext,
  prefix: string,
  o: Opening<C>,
): Promise<{ caps: C | undefined; configured: boolean }> {
  checkIdentity(ctx, prefix, (await o.client.describe({})).producer, o.category);
  const caps = await checkCheapAndStable(
    ctx,
    prefix,
    async () => (await o.client.getCapabilities({})).capabilities,
    (a, b) => equals(o.capabilitiesSchema, a, b),
  );
  if (caps) o.declarations(caps);
  checkConfigSchema(ctx, prefix, caps?.configSchema);
  await o.beforeConfigure?.();
  const configured = await checkConfigure(
    ctx,
    prefix,
    caps?.configSchema,
    async (config) => (await o.client.configure({ config })).result,
  );
  return { caps, configured };
}

/** gRPC status codes the checks name. */
export const Code = StatusCode;
const CODE_NAME: Record<number, string> = Object.fromEntries(Object.entries(Code).map(([k, v]) => [v, k]));
export const codeName = (code: number | undefined) =>
  code === undefined ? "no status" : (CODE_NAME[code] ?? `code ${code}`);

/** Describe: a name, a semantic version, the category and the negotiated protocol version. */
export function checkIdentity(
  ctx: CheckContext,
  prefix: string,
  producer: ProducerRef | undefined,
  category: PluginCategory | undefined,
): void {
  const problems: string[] = [];
  const p = producer;
  if (!p) problems.push("no producer");
  else {
    if (!p.name) problems.push("empty name");
    if (!SEMVER.test(p.version))
      problems.push(`version ${JSON.stringify(p.version)} is not a semantic version without "v"`);
    if (category !== undefined && p.category !== category)
      problems.push(`category ${p.category} is not PLUGIN_CATEGORY_${PluginCategory[category]}`);
    if (p.protocolVersion !== ctx.host.protocolVersion)
      problems.push(
        `protocol_version ${p.protocolVersion} differs from the negotiated ${ctx.host.protocolVersion}`,
      );
    const discovered = ctx.description.producers[prefix];
    if (discovered && (discovered.name !== p.name || discovered.version !== p.version))
      problems.push("Describe answers differently from discovery");
  }
  ctx.record(
    `${prefix}.describe`,
    problems.length ? "fail" : "pass",
    problems.length ? problems.join("; ") : `${p!.name} ${p!.version} (${p!.source || "no source"})`,
  );
}

/** Two capability calls before Configure: fast and identical. Returns the first answer. */
export async function checkCheapAndStable<T>(
  ctx: CheckContext,
  prefix: string,
  fetch: () => Promise<T | undefined>,
  same: (a: T, b: T) => boolean,
): Promise<T | undefined> {
  const t0 = Date.now();
  const first = await fetch();
  const ms = Date.now() - t0;
  const again = await fetch();
  if (first === undefined) {
    ctx.record(`${prefix}.capabilities.cheap`, "fail", "GetCapabilities returned no capabilities");
    return undefined;
  }
  const stable = again !== undefined && same(first, again);
  ctx.record(
    `${prefix}.capabilities.cheap`,
    stable && ms <= CAPABILITIES_BUDGET_MS ? "pass" : "fail",
    !stable
      ? "two GetCapabilities calls returned different answers"
      : ms > CAPABILITIES_BUDGET_MS
        ? `GetCapabilities took ${ms} ms before Configure (budget ${CAPABILITIES_BUDGET_MS} ms)`
        : `answered before Configure in ${ms} ms, stable across calls`,
  );
  return first;
}

/** A config schema exists, names each attribute once and gives no secret a default. */
export function checkConfigSchema(ctx: CheckContext, prefix: string, schema: ConfigSchema | undefined): void {
  if (!schema) {
    ctx.record(`${prefix}.capabilities.config_schema`, "fail", "no config_schema");
    return;
  }
  const names = schema.attributes.map((a) => a.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  const unnamed = names.filter((n) => !n).length;
  const leaky = schema.attributes
    .filter((a) => a.sensitive && a.defaultJson !== undefined)
    .map((a) => a.name);
  const problems = [
    ...(twice.length ? [`attributes declared twice: ${[...new Set(twice)].join(", ")}`] : []),
    ...(unnamed ? [`${unnamed} attributes without a name`] : []),
    ...(leaky.length ? [`sensitive attributes with a default: ${leaky.join(", ")}`] : []),
  ];
  ctx.record(
    `${prefix}.capabilities.config_schema`,
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : `${schema.attributes.length} attributes (${schema.attributes.filter((a) => a.sensitive).length} sensitive)`,
  );
}

const errorsOf = (r: ConfigureResult | undefined) =>
  (r?.diagnostics ?? []).filter((d) => d.severity === DiagnosticSeverity.ERROR);

/**
 * Configure: an empty block is refused in-band when something is required, a refusal
 * never repeats a secret it was given, and the given configuration is accepted last.
 */
export async function checkConfigure(
  ctx: CheckContext,
  prefix: string,
  schema: ConfigSchema | undefined,
  configure: (config: JsonObject) => Promise<ConfigureResult | undefined>,
): Promise<boolean> {
  const attrs = schema?.attributes ?? [];
  // A refusal is a diagnostic in the answer; a failed call is judged as a refusal with its message.
  const attempt = async (config: JsonObject): Promise<{ result?: ConfigureResult; failure?: string }> => {
    try {
      return { result: await configure(config) };
    } catch (err) {
      return { failure: `${codeName(codeOf(err))}: ${(err as Error).message}` };
    }
  };
  const required = attrs.filter((a) => a.required);
  if (required.length > 0) {
    const empty = await attempt({});
    const errs = errorsOf(empty.result);
    const named = required.every((a) => errs.some((d) => d.attributePath[0] === a.name));
    ctx.record(
      `${prefix}.configure.missing_required`,
      empty.failure ? "warn" : errs.length > 0 ? (named ? "pass" : "warn") : "fail",
      empty.failure
        ? `refused by a failed call (${empty.failure}) rather than diagnostics`
        : errs.length === 0
          ? `an empty configuration was accepted although ${required.map((a) => a.name).join(", ")} are required`
          : named
            ? "refused, naming every required attribute"
            : "refused, but not every missing attribute is named in an attribute_path",
    );
  } else ctx.record(`${prefix}.configure.missing_required`, "skip", "no attribute is required");

  // Secrets and an unknown attribute given the canary: whatever comes back must not quote it.
  const probe: JsonObject = { conformance_unknown_attribute: CONFIG_CANARY };
  for (const a of attrs.filter((a) => a.sensitive)) probe[a.name] = CONFIG_CANARY;
  const leaked = JSON.stringify((await attempt(probe)) ?? {}).includes(CONFIG_CANARY);
  ctx.record(
    `${prefix}.configure.no_echo`,
    leaked ? "fail" : "pass",
    leaked ? "a Configure answer repeats a value it was given" : "diagnostics never repeat a received value",
  );

  const given = await attempt(ctx.config);
  const errs = errorsOf(given.result);
  ctx.record(
    `${prefix}.configure.accepted`,
    given.failure || errs.length ? "fail" : "pass",
    given.failure
      ? `Configure with the given configuration failed: ${given.failure}`
      : errs.length
        ? `the given configuration was refused: ${errs.map((d) => `${d.attributePath.join(".")}: ${d.summary}`).join("; ")}`
        : "the given configuration was accepted",
  );
  return !given.failure && errs.length === 0;
}

/** The status code a call failed with (undefined: it succeeded). */
export async function failureCode(call: () => Promise<unknown>): Promise<number | undefined> {
  try {
    await call();
    return undefined;
  } catch (err) {
    return codeOf(err);
  }
}

/** A failure's gRPC code; the caller's own abort or timeout counts as CANCELLED. */
export function codeOf(err: unknown): number {
  const name = (err as { name?: unknown }).name;
  if (name === "AbortError" || name === "TimeoutError") return Code.CANCELLED;
  const code = (err as { code?: unknown }).code;
  return typeof code === "number" ? code : Code.UNKNOWN;
}

/**
 * A call that must fail with one of `expected` codes. A bare UNKNOWN, another code or
 * success are violations (an unclassified failure is worse than a wrong class only in name).
 */
export async function checkFailsWith(
  ctx: CheckContext,
  id: string,
  what: string,
  expected: readonly number[],
  call: () => Promise<unknown>,
): Promise<number | undefined> {
  const code = await failureCode(call);
  const ok = code !== undefined && expected.includes(code);
  ctx.record(
    id,
    ok ? "pass" : "fail",
    code === undefined
      ? `${what} succeeded; it must fail with ${expected.map(codeName).join(" or ")}`
      : ok
        ? `${what} failed with ${codeName(code)}`
        : `${what} failed with ${codeName(code)}, not ${expected.map(codeName).join(" or ")}`,
  );
  return code;
}

/** Last check of every suite: the plugin is still up and never crashed. */
export function checkHealth(ctx: CheckContext, prefix: string): void {
  const healthy = ctx.host.running && ctx.host.crashCount === 0;
  ctx.record(
    `${prefix}.health`,
    healthy ? "pass" : "fail",
    healthy ? "still running, never crashed" : `crashed ${ctx.host.crashCount} time(s) during the checks`,
  );
}

/** Values of a proto enum that are real members and not the UNSPECIFIED zero. */
export function badEnumValues(values: readonly number[], known: object): number[] {
  const real = new Set(Object.values(known).filter((v): v is number => typeof v === "number" && v !== 0));
  return values.filter((v) => !real.has(v));
}
