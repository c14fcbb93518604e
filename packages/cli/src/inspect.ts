// Launches resolved providers the way the kernel does and asks each served category
// for its static description: identity (Describe), config schema, tools, models,
// hook points, health. `agent validate` and `agent providers` use it; neither runs a
// session, so nothing here needs the agent loop.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type AgentConfig,
  type ResolvedProvider,
  SecretMask,
  withheldValues,
} from "@pluggableharness/config";
import {
  acceptedDigest,
  DescribeCache,
  defaultDescribeCacheDir,
  describeCacheKey,
  keptAnswerDigest,
  keptModelsAllowed,
  noteLaunch,
  outsidePluginSandbox,
  type ProviderDescription,
  providerTransport,
  sourcesFingerprint,
} from "@pluggableharness/kernel";
import type { HookPoint, ProducerRef } from "@pluggableharness/protocol/common";
import { type ConfigSchema, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { Health, HealthCheckResponse_ServingStatus } from "@pluggableharness/protocol/health";
import { MemoryService } from "@pluggableharness/protocol/memory";
import {
  type Capabilities as ModelCapabilities,
  ModelService,
  type ModelSpec,
} from "@pluggableharness/protocol/model";
import { type GetSchemaResponse, ToolService } from "@pluggableharness/protocol/tool";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { riskName } from "@pluggableharness/provider-tui";
import {
  createPluginHost,
  type PluginIsolation,
  type PluginTransportHost,
  preferBundle,
} from "@pluggableharness/runtime";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";

export interface ToolFacts {
  name: string;
  kind: string;
  risk: string;
}

export interface ProviderFacts {
  readonly resolved: ResolvedProvider;
  /** Categories served ("model", "tool", ...); empty when the launch failed. */
  categories: string[];
  producers: Record<string, ProducerRef>;
  configSchema?: ConfigSchema;
  tools: ToolFacts[];
  models: string[];
  /** The ModelSpecs behind `models`. */
  specs: ModelSpec[];
  hookPoints: HookPoint[];
  /** Names of the slash commands every category of it declares. */
  slashCommands: string[];
  healthy: boolean;
  /** Why the provider could not be launched or described. */
  error?: string;
  /** Diagnostics the provider itself returned from Configure (only when configured). */
  configureProblems: string[];
  /** The same, structured: what `agent validate` positions at the attribute they name. */
  configureDiagnostics: ConfigureDiagnostic[];
  /** The raw descriptions, for the kernel's own rules (ToolService.GetSchema, ModelService.GetCapabilities). */
  toolSchema?: GetSchemaResponse;
  modelCapabilities?: ModelCapabilities;
  /** The transport `agent run` would use for it (known once it is described). */
  isolation: PluginIsolation;
  /**
   * false: not launched; its description came from the describe cache and its configuration
   * (if asked for) is one its Configure accepted before, so there was nothing to check live.
   */
  started: boolean;
}

export interface ConfigureDiagnostic {
  readonly severity: "error" | "warning";
  readonly attributePath: readonly string[];
  readonly summary: string;
  readonly detail: string;
}

const TIMEOUT_MS = 15_000;

function toolKind(kind: number): string {
  return kind === 1 ? "resource" : kind === 2 ? "data_source" : kind === 3 ? "interactive" : "unknown";
}

/** What inspectProviders may be asked to do. */
export interface InspectOptions {
  configure?: (name: string, schema: ConfigSchema | undefined) => JsonObject | undefined;
  log?: (line: string) => void;
  /** The environment the configuration reads (its env() values are masked in what is reported). */
  env?: NodeJS.ProcessEnv;
  /** Launch every provider, even one the describe cache answers for (`agent providers --check`). */
  live?: boolean;
  /** Work out the transport `agent run` would use (probes bubblewrap once); default true. */
  transports?: boolean;
}

/**
 * Collects every resolved provider's facts, launching (in parallel) only those that must
 * run: the kernel's describe cache (describe-cache.ts) answers for a first-party provider
 * whose exact build was described before, and a provider whose configuration its Configure
 * accepted before (the same record `agent run` trusts to leave it dormant) has nothing
 * left to check. A provider launched here is described into the cache, and a configuration
 * it accepts is recorded, as the kernel does. With `configure`, each provider whose block
 * decodes is configured, so model providers whose models come from configuration list them.
 */
export async function inspectProviders(
  config: AgentConfig,
  resolved: readonly ResolvedProvider[],
  options: InspectOptions = {},
): Promise<ProviderFacts[]> {
  const hosts: PluginTransportHost[] = [];
  const env = options.env ?? process.env;
  // A provider configured with a secret may repeat it (an MCP server's stderr in its
  // Configure warning): masked as the kernel masks it (docs/security/mcp.md).
  const mask = new SecretMask(withheldValues(config.projectDir, env));
  // The kernel's own cache (kernel.ts), so what one command learns the other reuses.
  const cache = new DescribeCache(defaultDescribeCacheDir(env));
  const keyOptions = {
    installationRoot: installationRoot(),
    bundles: env["AGENT_NO_BUNDLES"] !== "1",
    describeCache: cache,
  };
  try {
    return await Promise.all(
      resolved.map(async (r): Promise<ProviderFacts> => {
        const facts: ProviderFacts = {
          resolved: r,
          categories: [],
          producers: {},
          tools: [],
          models: [],
          specs: [],
          hookPoints: [],
          slashCommands: [],
          healthy: false,
          configureProblems: [],
          configureDiagnostics: [],
          isolation: providerTransport(r, r.isolation, false).isolation,
          started: false,
        };
        const key = describeCacheKey(r, keyOptions);
        const entry = key && !options.live ? cache.read(r.source, key) : undefined;
        if (entry && fromCache(facts, entry, key!, cache, config.projectDir, options)) {
          if (options.transports !== false) facts.isolation = runTransport(config, r, facts.categories);
          return facts;
        }
        facts.started = true;
        noteLaunch(env, r.localName);
        // Described where the kernel describes it: a first-party provider in a worker thread by default.
        const host = createPluginHost(facts.isolation, {
          name: r.localName,
          // A first-party provider runs from its up-to-date bundle, as under the kernel.
          command: r.origin === "first_party" ? preferBundle(r.executable, installationRoot()) : r.executable,
          cwd: config.projectDir,
          launchTimeoutMs: TIMEOUT_MS,
          logSink: (rec) => options.log?.(`[${r.localName}] ${mask.mask(rec.message)}`),
        });
        hosts.push(host);
        let holdsSecret = false;
        try {
          const d = await host.describe();
          facts.categories = d.categories;
          facts.producers = d.producers;
          if (options.transports !== false) facts.isolation = runTransport(config, r, d.categories);
          const health = await host.client(Health).check({ service: "plugin" }, { timeoutMs: TIMEOUT_MS });
          facts.healthy = health.status === HealthCheckResponse_ServingStatus.SERVING;
          const described = await describeCategories(host, facts);
          // Stored before Configure, as the kernel stores it: a description carries no secret.
          if (key && !entry) cache.write(r.source, key, described);
          const values = options.configure?.(r.localName, facts.configSchema);
          // As in a session, only a provider given a secret has what it reports masked: the
          // others' reports are about the user's own values (a missing root's path).
          holdsSecret = values !== undefined && mask.contains(JSON.stringify(values));
          if (values !== undefined) {
            await configureAll(host, facts, values);
            const accepted = !facts.configureDiagnostics.some((x) => x.severity === "error");
            const digest = acceptedDigest(values, facts.configSchema);
            if (key && accepted) cache.accept(r.source, key, digest);
            // Whether a sensitive attribute is set: nothing derived from it may be kept.
            const secretSet = (facts.configSchema?.attributes ?? []).some(
              (a) =>
                a.sensitive &&
                values[a.name] !== undefined &&
                values[a.name] !== null &&
                values[a.name] !== "",
            );
            const kept = { key, digest, accepted, secretSet: secretSet || holdsSecret };
            // A bridge's operations exist once its configuration is applied (the MCP bridge).
            if (facts.toolSchema?.operationsFromConfig) {
              await describeCategories(host, facts, ["tool"]);
              keepOperations(cache, r, facts, kept, config.projectDir);
            }
            if (facts.categories.includes("model")) {
              const caps = (await host.client(ModelService).getCapabilities({}, { timeoutMs: TIMEOUT_MS }))
                .capabilities;
              facts.models = caps?.models.map((m) => m.id) ?? facts.models;
              if (caps) facts.modelCapabilities = caps;
              facts.specs = caps?.models ?? facts.specs;
              if (caps && key && accepted && keptModelsAllowed(caps, described.model, kept.secretSet))
                cache.writeModels(r.source, key, keptAnswerDigest(digest, config.projectDir), caps);
            }
          }
        } catch (err) {
          facts.healthy = false;
          facts.error = (err as Error).message;
        }
        return holdsSecret ? maskFacts(facts, mask) : facts;
      }),
    );
  } finally {
    await Promise.all(hosts.map((h) => h.shutdown().catch(() => {})));
  }
}

/**
 * Fills `facts` from a cached description when the provider need not run: its
 * configuration, if asked for, is one its Configure accepted before, and whatever it
 * declares only once configured was kept for that configuration: a cacheable bridge's
 * operations (agent, commands: as `agent run` keeps them, with their source files
 * unchanged) and a model provider's models. A live bridge (MCP) always runs. false:
 * launch it.
 */
function fromCache(
  facts: ProviderFacts,
  d: ProviderDescription,
  key: string,
  cache: DescribeCache,
  projectDir: string,
  options: InspectOptions,
): boolean {
  if (d.toolSchema?.operationsFromConfig && !d.toolSchema.operationsCacheable) return false;
  const f: ProviderFacts = { ...facts, categories: [...d.categories], producers: { ...d.producers } };
  applyDescription(f, d);
  let digest: string | undefined;
  if (options.configure) {
    const values = options.configure(f.resolved.localName, f.configSchema);
    digest = values === undefined ? undefined : acceptedDigest(values, f.configSchema);
    if (digest !== undefined && !cache.accepted(f.resolved.source, key, digest)) return false;
  }
  const keptUnder = digest === undefined ? undefined : keptAnswerDigest(digest, projectDir);
  if (d.toolSchema?.operationsFromConfig) {
    // Without a configuration to look it up by, the bridge must be asked.
    const kept = keptUnder && cache.readOperations(f.resolved.source, key, keptUnder);
    if (!kept || kept.fingerprint !== sourcesFingerprint(kept.schema.operationSources)) return false;
    applyDescription(f, { ...d, toolSchema: kept.schema });
    // Its Configure warnings (a command file that is not a command), as when it ran.
    for (const w of kept.warnings)
      f.configureDiagnostics.push({ severity: "warning", attributePath: [], summary: w, detail: "" });
    f.configureProblems.push(...kept.warnings);
  }
  if (options.configure && d.categories.includes("model")) {
    const caps = keptUnder && cache.readModels(f.resolved.source, key, keptUnder);
    if (!caps) return false;
    f.models = caps.models.map((m) => m.id);
    f.modelCapabilities = caps;
    f.specs = caps.models;
  }
  // The same build answered every description when it was cached; it has not run since.
  Object.assign(facts, f, { healthy: true });
  return true;
}

/**
 * Keeps a cacheable bridge's post-Configure operations as the kernel does (providers.ts,
 * keepOperations), so the next `agent validate`, `agent providers` or `agent run` leaves it
 * dormant: only for an accepted configuration that holds no secret.
 */
function keepOperations(
  cache: DescribeCache,
  r: ResolvedProvider,
  facts: ProviderFacts,
  kept: { key: string | undefined; digest: string; accepted: boolean; secretSet: boolean },
  projectDir: string,
): void {
  const schema = facts.toolSchema;
  if (!kept.key || !kept.accepted || kept.secretSet || !schema?.operationsCacheable) return;
  cache.writeOperations(r.source, kept.key, keptAnswerDigest(kept.digest, projectDir), {
    schema,
    fingerprint: sourcesFingerprint(schema.operationSources),
    warnings: facts.configureDiagnostics
      .filter((x) => x.severity === "warning")
      .map((x) => x.detail || x.summary),
  });
}

/** What is reported of a provider, with every secret masked (the raw descriptions stay for the kernel's rules). */
function maskFacts(facts: ProviderFacts, mask: SecretMask): ProviderFacts {
  if (mask.empty) return facts;
  if (facts.error !== undefined) facts.error = mask.mask(facts.error);
  facts.configureProblems = facts.configureProblems.map((p) => mask.mask(p));
  facts.configureDiagnostics = facts.configureDiagnostics.map((d) => ({
    ...d,
    summary: mask.mask(d.summary),
    detail: mask.mask(d.detail),
  }));
  facts.tools = facts.tools.map((t) => ({ ...t, name: mask.mask(t.name) }));
  return facts;
}

/** The kernel's choice once the categories are known: a first-party tool provider it sandboxes runs in the sandbox host. */
function runTransport(
  config: AgentConfig,
  r: ResolvedProvider,
  categories: readonly string[],
): PluginIsolation {
  const mode = config.settings.sandbox;
  const sandboxed =
    categories.includes("tool") &&
    mode !== "off" &&
    !outsidePluginSandbox(r) &&
    (mode === "required" || probeSandbox().ok);
  return providerTransport(r, r.isolation, sandboxed).isolation;
}

/** Asks the provider for the description of each category it serves (all, or `only`) and applies it. */
async function describeCategories(
  host: PluginTransportHost,
  facts: ProviderFacts,
  only?: readonly string[],
): Promise<ProviderDescription> {
  const call = { timeoutMs: TIMEOUT_MS };
  const d: { -readonly [K in keyof ProviderDescription]: ProviderDescription[K] } = {
    categories: facts.categories,
    producers: facts.producers,
  };
  for (const category of only ?? facts.categories) {
    switch (category) {
      case "tool":
        d.toolSchema = await host.client(ToolService).getSchema({}, call);
        break;
      case "model": {
        const caps = (await host.client(ModelService).getCapabilities({}, call)).capabilities;
        if (caps) d.model = caps;
        else facts.models = [];
        break;
      }
      case "context": {
        const caps = (await host.client(ContextService).getCapabilities({}, call)).capabilities;
        if (caps) d.context = caps;
        break;
      }
      case "memory": {
        const caps = (await host.client(MemoryService).getCapabilities({}, call)).capabilities;
        if (caps) d.memory = caps;
        break;
      }
      case "frontend": {
        const caps = (await host.client(FrontendService).getCapabilities({}, call)).capabilities;
        if (caps) d.frontend = caps;
        break;
      }
      case "widget": {
        const caps = (await host.client(WidgetService).getCapabilities({}, call)).capabilities;
        if (caps) d.widget = caps;
        break;
      }
      default:
        break;
    }
  }
  applyDescription(facts, d);
  return d;
}

/** Sets what a description says about a provider: tools, models, hook points, commands, config schema. */
function applyDescription(facts: ProviderFacts, d: ProviderDescription): void {
  const schema = (s: ConfigSchema | undefined) => {
    if (s && s.attributes.length > 0 && facts.configSchema === undefined) facts.configSchema = s;
  };
  const hooks = (points: readonly HookPoint[], commands: readonly { name: string }[] = []) => {
    for (const p of points) if (!facts.hookPoints.includes(p)) facts.hookPoints.push(p);
    for (const c of commands) facts.slashCommands.push(c.name);
  };
  if (d.toolSchema) {
    const res = d.toolSchema;
    facts.toolSchema = res;
    facts.tools = res.tools.map((t) => ({ name: t.name, kind: toolKind(t.kind), risk: riskName(t.risk) }));
    hooks(res.supportedHookPoints, res.slashCommands);
    schema(res.configSchema);
  }
  if (d.model) {
    const caps = d.model;
    facts.models = caps.models.map((m) => m.id);
    facts.modelCapabilities = caps;
    facts.specs = caps.models;
    hooks(caps.supportedHookPoints, caps.slashCommands);
    schema(caps.configSchema);
  }
  for (const caps of [d.context, d.memory, d.frontend, d.widget]) {
    if (!caps) continue;
    hooks(caps.supportedHookPoints, caps.slashCommands);
    schema(caps.configSchema);
  }
}

async function configureAll(
  host: PluginTransportHost,
  facts: ProviderFacts,
  values: JsonObject,
): Promise<void> {
  const call = { timeoutMs: TIMEOUT_MS };
  const request = { config: values };
  for (const category of facts.categories) {
    const res =
      category === "tool"
        ? await host.client(ToolService).configure(request, call)
        : category === "model"
          ? await host.client(ModelService).configure(request, call)
          : category === "context"
            ? await host.client(ContextService).configure(request, call)
            : category === "memory"
              ? await host.client(MemoryService).configure(request, call)
              : category === "frontend"
                ? await host.client(FrontendService).configure(request, call)
                : category === "widget"
                  ? await host.client(WidgetService).configure(request, call)
                  : undefined;
    for (const d of res?.result?.diagnostics ?? []) {
      facts.configureDiagnostics.push({
        severity: d.severity === DiagnosticSeverity.WARNING ? "warning" : "error",
        attributePath: [...d.attributePath],
        summary: d.summary,
        detail: d.detail,
      });
      const where = d.attributePath.length > 0 ? ` (${d.attributePath.join(".")})` : "";
      facts.configureProblems.push(`${d.summary}${where}${d.detail ? `: ${d.detail}` : ""}`);
    }
  }
}

/** The directory holding providers/<name>/: this installation's root (a path, not a URL: spaces stay spaces). */
export function installationRoot(): string {
  return fileURLToPath(new URL("../../..", import.meta.url)).replace(/\/$/, "");
}

/** This CLI's version (its package.json). */
export function cliVersion(): string {
  return (
    JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
  ).version;
}
