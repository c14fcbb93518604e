// The providers a kernel runs with. Loading gets every declared provider's static
// description (its categories from Describe, then GetSchema / GetCapabilities), validates
// those with the domain rules, runs the configuration's second pass against them, decodes
// each provider block against its ConfigSchema and calls Configure.
//
// A description comes from the describe cache when it holds one for the provider's exact
// code (describe-cache.ts); such a provider stays dormant: its process is launched only
// when something first calls it (a tool call, a Contribute, a hook) or when a session
// activates it (its model providers, which routing needs configured), and Configure
// reaches it from the launch hook before any other call. Without an entry the provider
// is launched, described, cached and configured right away.
import type { DescService, JsonObject } from "@bufbuild/protobuf";
import {
  type AgentConfig,
  ConfigError,
  decodeProviderConfig,
  errorsOf,
  formatDiagnostic,
  type LoadedProviders,
  type ResolvedProvider,
  validateAgainstProviders,
} from "@pluggableharness/config";
import type { ServiceClient } from "@pluggableharness/goplugin";
import type { HookPoint, ProducerRef } from "@pluggableharness/protocol/common";
import { type ConfigSchema, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type ContextCapabilities, ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { MemoryService } from "@pluggableharness/protocol/memory";
import { ModelService } from "@pluggableharness/protocol/model";
import type { SlashCommandSpec } from "@pluggableharness/protocol/slashcommand";
import { ToolService } from "@pluggableharness/protocol/tool";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { freshBundle, type PluginIsolation, type PluginTransportHost } from "@pluggableharness/runtime";
import {
  type ValidatedCapabilities,
  type ValidatedToolset,
  validateCapabilities,
  validateToolSchemas,
} from "../domain/index.ts";
import type { KernelLogger } from "../log.ts";
import { KERNEL_VERSION } from "../version.ts";
import { DescribeCache, type ProviderDescription, workspaceDependencyDigest } from "./describe-cache.ts";
import type { PluginPool, PoolOwner } from "./pool.ts";
import { PluginSandboxState } from "./sandbox.ts";

/** One provider that launched and answered its category descriptions. */
export interface LoadedProvider {
  /** The required_providers local name. */
  readonly name: string;
  readonly host: PluginTransportHost;
  readonly resolved: ResolvedProvider;
  /** Categories served, as the runtime names them ("model", "tool", "context", "hook", ...). */
  readonly categories: ReadonlySet<string>;
  /** Describe answers per category. */
  readonly producers: Readonly<Record<string, ProducerRef>>;
  /** Textual position in agent.hcl (byte offset of its provider block, else its required_providers entry). */
  readonly order: number;
  readonly tools?: ValidatedToolset;
  /** Operations whose Preview is implemented. */
  readonly previewSupported: ReadonlySet<string>;
  /** Refreshed after Configure: a provider may serve models its configuration declares. */
  models?: ValidatedCapabilities;
  readonly context?: ContextCapabilities;
  /** supported_hook_points from every category description. */
  readonly hookPoints: readonly HookPoint[];
  readonly slashCommands: readonly SlashCommandSpec[];
  readonly configSchema?: ConfigSchema;
  /** The decoded Configure payload. Holds resolved secrets: never log or persist it. */
  config: JsonObject;
  /** Cached answer to "does this model provider implement CountTokens". */
  countTokensSupported?: boolean;
  /** Configure succeeded once; a relaunched process gets the same configuration again. */
  configured?: boolean;
  /** Every launch of this provider's process sends Configure from the launch hook. */
  configureOnLaunch?: boolean;
  /** Described from the cache and not launched yet. */
  dormant: boolean;
  /** What decides the sandbox of its process (plugins/sandbox.ts). */
  sandbox?: PluginSandboxState;
  /** The describe-cache entry it was built from or stored in. */
  readonly cacheKey?: string;
  /** The launch and post-Configure model refresh a session waits for (activate()). */
  activation?: Promise<void>;
  readonly tool: ServiceClient<typeof ToolService>;
  readonly model: ServiceClient<typeof ModelService>;
  readonly contextClient: ServiceClient<typeof ContextService>;
  readonly hook: ServiceClient<typeof HookSubscriberService>;
}

export interface ProviderStatus {
  readonly name: string;
  readonly state: "loaded" | "failed" | "excluded";
  readonly source: string;
  readonly origin?: ResolvedProvider["origin"];
  readonly executable?: string;
  readonly categories: readonly string[];
  /** Describe answers per category. */
  readonly producers: Readonly<Record<string, ProducerRef>>;
  /** How a loaded provider runs: its own process, or a worker thread of the kernel. */
  readonly isolation?: PluginIsolation;
  readonly error?: string;
}

/** A provider failed to launch or described itself in a way the kernel rejects. */
export class ProviderLoadError extends Error {
  readonly code = "provider_load_failed";
  readonly failures: ReadonlyArray<{ readonly provider: string; readonly message: string }>;
  constructor(failures: ReadonlyArray<{ provider: string; message: string }>) {
    super(
      `${failures.length === 1 ? "a provider" : `${failures.length} providers`} failed to load:\n${failures
        .map((f) => `  - ${f.provider}: ${f.message}`)
        .join("\n")}`,
    );
    this.name = "ProviderLoadError";
    this.failures = failures;
  }
}

/** A provider rejected its configuration (ERROR diagnostics from Configure). */
export class ProviderConfigureError extends Error {
  readonly code = "provider_configure_failed";
  readonly provider: string;
  constructor(provider: string, problems: readonly string[]) {
    super(
      `provider "${provider}" rejected its configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "ProviderConfigureError";
    this.provider = provider;
  }
}

export interface LoadProvidersOptions {
  readonly config: AgentConfig;
  readonly resolved: readonly ResolvedProvider[];
  readonly pool: PluginPool;
  readonly owner: PoolOwner;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly log: KernelLogger;
  /** Local names not to launch (e.g. frontend plugins a headless run does not want). */
  readonly exclude?: readonly string[];
  /** Keep going when a provider fails to load (it is then simply absent). Default false. */
  readonly tolerateFailures?: boolean;
  /** Deadline for each describe call. */
  readonly describeTimeoutMs?: number;
  /** The installation root: where first-party bundles are looked for. */
  readonly installationRoot?: string;
  /** Launch first-party providers from their up-to-date bundles (default true). */
  readonly bundles?: boolean;
  /** The describe cache; undefined launches every provider to describe it. */
  readonly describeCache?: DescribeCache;
  /** Runs every first-party provider with this isolation instead of its configured one. */
  readonly isolation?: PluginIsolation;
}

/**
 * V8 flags for first-party plugin processes: a 1 MiB young generation (the default grows
 * to 16 MiB per semi-space) keeps each plugin's resident memory lower at no measurable
 * cost in speed; see docs/decisions.md, "Performance".
 */
export const FIRST_PARTY_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];

/** Diagnostics about a profile's model candidates, judged once the models are final. */
const MODEL_REFERENCE_CATEGORIES: ReadonlySet<string> = new Set(["unknown_model", "unsupported_parameter"]);

/** Whole-call deadline for the static description RPCs (they must be cheap and offline). */
const DESCRIBE_TIMEOUT_MS = 10_000;
const CONFIGURE_TIMEOUT_MS = 30_000;

export class ProviderRegistry {
  readonly #loaded = new Map<string, LoadedProvider>();
  readonly #statuses: ProviderStatus[] = [];
  #config: AgentConfig | undefined;
  #env: Readonly<Record<string, string | undefined>> = {};
  #log: KernelLogger | undefined;
  #cache: DescribeCache | undefined;
  #timeoutMs = DESCRIBE_TIMEOUT_MS;

  private constructor() {}

  /**
   * Model references are judged once a provider is configured (it may declare models then):
   * an unknown model is a warning; a parameter the model refuses is a warning, or with
   * settings.strict_params an error that stops the load.
   */
  #checkModelReferences(providers: readonly LoadedProvider[]): void {
    if (!this.#config || !this.#log) return;
    const facts: Record<string, LoadedProviders[string]> = {};
    for (const p of providers) {
      facts[p.name] = {
        tools: p.tools ? [...p.tools.tools.keys()] : [],
        models: p.models ? [...p.models.models.keys()] : [],
        specs: p.models ? [...p.models.models.values()] : [],
        hookPoints: [...p.hookPoints],
      };
    }
    const diags = validateAgainstProviders(this.#config, facts, this.#env).filter((d) =>
      MODEL_REFERENCE_CATEGORIES.has(d.category),
    );
    for (const d of diags) if (d.severity === "warning") this.#log.warn(formatDiagnostic(d));
    if (errorsOf(diags).length > 0) throw new ConfigError(errorsOf(diags));
  }

  /**
   * Launches a dormant provider (Configure runs from the launch hook) and, for a model
   * provider, reads its models again. Resolves at once for a running provider; a failed
   * activation is retried by the next call.
   */
  activate(name: string): Promise<void> {
    const p = this.#loaded.get(name);
    if (!p?.dormant) return Promise.resolve();
    p.activation ??= (async () => {
      try {
        await p.host.start();
        if (p.categories.has("model")) {
          await refreshModels(p, { log: this.#log!, describeTimeoutMs: this.#timeoutMs });
          this.#checkModelReferences([p]);
        }
        p.dormant = false;
      } catch (err) {
        p.activation = undefined;
        throw err;
      }
    })();
    return p.activation;
  }

  /**
   * Called for every launch of a provider's process, before any other call reaches it:
   * checks the identity against what the session was built from (a mismatch drops the
   * cache entry) and sends Configure when the provider wants it on each launch.
   */
  async launched(
    name: string,
    description: { categories: readonly string[]; producers: Readonly<Record<string, ProducerRef>> },
    client: ClientFactory,
  ): Promise<boolean> {
    const p = this.#loaded.get(name);
    if (!p) return false;
    if (p.cacheKey && this.#cache && !sameIdentity(p, description)) {
      this.#cache.invalidate(p.resolved.source, p.cacheKey);
      this.#log?.warn(
        `provider "${name}" describes itself differently from its cached description; the cache entry is dropped`,
        { provider: name },
      );
    }
    if (!p.configureOnLaunch) return false;
    await sendConfigure(p, client, this.#log!);
    p.configured = true;
    return true;
  }

  static async load(options: LoadProvidersOptions): Promise<ProviderRegistry> {
    const registry = new ProviderRegistry();
    const exclude = new Set(options.exclude ?? []);
    const failures: { provider: string; message: string }[] = [];
    await Promise.all(
      options.resolved.map(async (resolved) => {
        const name = resolved.localName;
        if (exclude.has(name)) {
          registry.#statuses.push({
            name,
            state: "excluded",
            source: resolved.source,
            origin: resolved.origin,
            executable: resolved.executable,
            categories: [],
            producers: {},
          });
          return;
        }
        try {
          const p = await loadProvider(resolved, options);
          registry.#loaded.set(name, p);
        } catch (err) {
          const message = (err as Error).message;
          failures.push({ provider: name, message });
          options.log.error(`provider "${name}" failed to load`, { provider: name, error: message });
          registry.#statuses.push({
            name,
            state: "failed",
            source: resolved.source,
            origin: resolved.origin,
            executable: resolved.executable,
            categories: [],
            producers: {},
            error: message,
          });
        }
      }),
    );
    if (failures.length > 0 && !options.tolerateFailures) throw new ProviderLoadError(failures);

    // The configuration's second pass, against what actually loaded.
    const facts: Record<string, LoadedProviders[string]> = {};
    for (const p of registry.#loaded.values()) {
      facts[p.name] = {
        tools: p.tools ? [...p.tools.tools.keys()] : [],
        models: p.models ? [...p.models.models.keys()] : [],
        hookPoints: [...p.hookPoints],
        slashCommands: p.slashCommands.map((c) => c.name),
        ...(p.configSchema ? { configSchema: p.configSchema } : {}),
      };
    }
    // Model references are judged after Configure (below), when every model is known.
    const diags = validateAgainstProviders(options.config, facts, options.env).filter(
      (d) => !MODEL_REFERENCE_CATEGORIES.has(d.category),
    );
    for (const d of diags) if (d.severity === "warning") options.log.warn(formatDiagnostic(d));
    if (errorsOf(diags).length > 0) throw new ConfigError(errorsOf(diags));

    // Decode every block; Configure what is running (a dormant provider gets it at launch).
    await Promise.all([...registry.#loaded.values()].map((p) => configureProvider(p, options)));

    // A model provider may serve models its configuration declares (an OpenAI-compatible
    // server's model list), so its capabilities are read again once it is configured.
    const running = [...registry.#loaded.values()].filter((p) => !p.dormant);
    await Promise.all(running.map((p) => refreshModels(p, options)));
    registry.#config = options.config;
    registry.#env = options.env;
    registry.#log = options.log;
    registry.#cache = options.describeCache;
    registry.#timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
    registry.#checkModelReferences(running);

    for (const p of registry.#loaded.values()) {
      registry.#statuses.push({
        name: p.name,
        state: "loaded",
        source: p.resolved.source,
        origin: p.resolved.origin,
        executable: p.resolved.executable,
        categories: [...p.categories],
        producers: p.producers,
        isolation: p.host.isolation,
      });
    }
    registry.#statuses.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return registry;
  }

  get(name: string): LoadedProvider | undefined {
    return this.#loaded.get(name);
  }

  all(): LoadedProvider[] {
    return [...this.#loaded.values()].sort((a, b) => a.order - b.order);
  }

  statuses(): readonly ProviderStatus[] {
    return this.#statuses;
  }

  /** Context providers in declaration order. */
  contextProviders(): LoadedProvider[] {
    return this.all().filter((p) => p.categories.has("context") && p.context !== undefined);
  }

  /** Model providers in declaration order. */
  modelProviders(): LoadedProvider[] {
    return this.all().filter((p) => p.models !== undefined);
  }
}

function textualOrder(config: AgentConfig, name: string): number {
  const block = config.providers.find((b) => b.name === name);
  if (block) return block.range.start.byte;
  const req = config.requiredProviders.find((r) => r.localName === name);
  return req ? req.range.start.byte : Number.MAX_SAFE_INTEGER;
}

function sameIdentity(
  p: LoadedProvider,
  d: { categories: readonly string[]; producers: Readonly<Record<string, ProducerRef>> },
): boolean {
  if (d.categories.length !== p.categories.size || d.categories.some((c) => !p.categories.has(c)))
    return false;
  return d.categories.every((c) => {
    const a = p.producers[c];
    const b = d.producers[c];
    return !!a && !!b && a.name === b.name && a.version === b.version && a.source === b.source;
  });
}

/** What runs for a resolved provider: its fresh bundle (first party) or its executable. */
function launchTarget(
  resolved: ResolvedProvider,
  options: LoadProvidersOptions,
): { command: string; codeDigest: string | undefined } {
  const root = options.installationRoot;
  // A forge build is identified by its verified release asset: describe-cacheable.
  if (resolved.origin === "forge" && resolved.checksum && options.describeCache) {
    return { command: resolved.executable, codeDigest: `asset:${resolved.checksum}` };
  }
  if (resolved.origin !== "first_party" || !root || !resolved.packageDir) {
    return { command: resolved.executable, codeDigest: undefined };
  }
  const bundle = options.bundles === false ? undefined : freshBundle(resolved.executable, root);
  if (bundle) return { command: bundle.path, codeDigest: `bundle:${bundle.digest}` };
  if (!options.describeCache) return { command: resolved.executable, codeDigest: undefined };
  return {
    command: resolved.executable,
    codeDigest: `source:${workspaceDependencyDigest(resolved.packageDir, root)}`,
  };
}

/**
 * The transport a provider runs on (docs/decisions.md, "Plugin transports", isolation and
 * the plugin sandbox). Anything but a first-party provider: its own process, always. A
 * provider the kernel puts in the plugin sandbox (a tool provider, unless settings.sandbox
 * is "off" or the sandbox cannot run under "best_effort"): a process too, whatever was
 * asked, because a worker thread shares the kernel's process and cannot be confined by
 * bubblewrap; `overridden` says a requested worker was refused for that reason. Any other
 * first-party provider: what was requested, else a worker thread.
 */
export function providerTransport(
  resolved: Pick<ResolvedProvider, "origin">,
  requested: PluginIsolation | undefined,
  sandboxed: boolean,
): { isolation: PluginIsolation; overridden: boolean } {
  if (resolved.origin !== "first_party") return { isolation: "process", overridden: false };
  if (sandboxed) return { isolation: "process", overridden: requested === "worker" };
  return { isolation: requested ?? "worker", overridden: false };
}

/** The kernel would run this provider's process in a sandbox (a "required" sandbox that cannot run counts). */
function wouldSandbox(sandbox: PluginSandboxState): boolean {
  try {
    return sandbox.desired() !== undefined;
  } catch {
    return true;
  }
}

function warnOverridden(name: string, options: LoadProvidersOptions): void {
  options.log.warn(
    `provider "${name}" runs as its own process, not in a worker thread as asked: it is a tool provider the plugin sandbox confines, and a worker thread cannot be sandboxed (settings { sandbox = "off" } lifts that)`,
    { provider: name },
  );
}

async function loadProvider(
  resolved: ResolvedProvider,
  options: LoadProvidersOptions,
): Promise<LoadedProvider> {
  const name = resolved.localName;
  const target = launchTarget(resolved, options);
  const sandbox = new PluginSandboxState(resolved, options.config, options.env, options.log);
  const cache = options.describeCache;
  const cacheKey =
    cache && target.codeDigest ? DescribeCache.key(resolved, target.codeDigest, KERNEL_VERSION) : undefined;
  const entry = cacheKey ? cache!.read(resolved.source, cacheKey) : undefined;
  if (entry) {
    sandbox.isTool = entry.categories.includes("tool");
    sandbox.categories = entry.categories;
    if (entry.toolSchema) sandbox.tools = entry.toolSchema;
  }
  const requested = resolved.origin === "first_party" ? (options.isolation ?? resolved.isolation) : undefined;
  // Not described yet, it is not known to be a tool: a first-party provider is described in
  // a worker (unconfined, like a process described before its sandbox is known) and moves.
  const where = providerTransport(resolved, requested, wouldSandbox(sandbox));
  if (where.overridden) warnOverridden(name, options);
  const acquire = (isolation: PluginIsolation) =>
    options.pool.acquire(name, target.command, options.owner, {
      cwd: options.config.projectDir,
      ...(resolved.origin === "first_party" ? { nodeArgs: FIRST_PARTY_NODE_FLAGS } : {}),
      sandbox: sandbox.forLaunch,
      isolation,
    });
  let host = acquire(where.isolation);
  // A process some other kernel already runs (a shared pool) is configured here, not lazily.
  const cached = entry && !host.running ? entry : undefined;
  if (cached) {
    try {
      return { ...buildLoaded(resolved, host, cached, { ...options, cacheKey, dormant: true }), sandbox };
    } catch {
      // an entry the rules now reject: describe the provider live
      cache!.invalidate(resolved.source, cacheKey!);
    }
  }
  const live = await fetchDescription(host, options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS);
  if (cacheKey) cache!.write(resolved.source, cacheKey, live);
  sandbox.isTool = live.categories.includes("tool");
  sandbox.categories = live.categories;
  if (live.toolSchema) sandbox.tools = live.toolSchema;
  let dormant = false;
  const after = providerTransport(resolved, requested, wouldSandbox(sandbox));
  if (host.isolation !== after.isolation) {
    // Described in a worker, it belongs in the sandbox: a process from its first use on.
    if (after.overridden) warnOverridden(name, options);
    host = acquire(after.isolation);
    dormant = true;
  }
  const p = buildLoaded(resolved, host, live, {
    ...options,
    ...(cacheKey ? { cacheKey } : {}),
    dormant,
  });
  // Described unconfined: a plugin that belongs in a sandbox is stopped before any other
  // call reaches it, and relaunched in it on first use.
  if (sandbox.stale()) await host.shutdown();
  return { ...p, sandbox };
}

/** Asks a provider's process for its static description (launching it). */
async function fetchDescription(host: PluginTransportHost, timeoutMs: number): Promise<ProviderDescription> {
  const description = await host.describe();
  const categories = new Set(description.categories);
  const call = { timeoutMs };
  const d: {
    -readonly [K in keyof ProviderDescription]: ProviderDescription[K];
  } = { categories: description.categories, producers: description.producers };
  const [toolSchema, model, context, memory, frontend, widget] = await Promise.all([
    categories.has("tool") ? host.client(ToolService).getSchema({}, call) : undefined,
    categories.has("model") ? host.client(ModelService).getCapabilities({}, call) : undefined,
    categories.has("context") ? host.client(ContextService).getCapabilities({}, call) : undefined,
    categories.has("memory") ? host.client(MemoryService).getCapabilities({}, call) : undefined,
    categories.has("frontend") ? host.client(FrontendService).getCapabilities({}, call) : undefined,
    categories.has("widget") ? host.client(WidgetService).getCapabilities({}, call) : undefined,
  ]);
  if (toolSchema) d.toolSchema = toolSchema;
  if (model) {
    if (!model.capabilities) throw new Error("ModelService.GetCapabilities returned no capabilities");
    d.model = model.capabilities;
  }
  if (context) {
    if (!context.capabilities) throw new Error("ContextService.GetCapabilities returned no capabilities");
    d.context = context.capabilities;
  }
  if (memory?.capabilities) d.memory = memory.capabilities;
  if (frontend?.capabilities) d.frontend = frontend.capabilities;
  if (widget?.capabilities) d.widget = widget.capabilities;
  return d;
}

/** Validates a description with the domain rules and makes the provider the kernel uses. */
function buildLoaded(
  resolved: ResolvedProvider,
  host: PluginTransportHost,
  d: ProviderDescription,
  options: LoadProvidersOptions & { readonly cacheKey?: string; readonly dormant: boolean },
): LoadedProvider {
  const name = resolved.localName;
  const categories = new Set(d.categories);
  let tools: ValidatedToolset | undefined;
  let previewSupported = new Set<string>();
  let models: ValidatedCapabilities | undefined;
  let context: ContextCapabilities | undefined;
  const hookPoints = new Set<HookPoint>();
  const slashCommands: SlashCommandSpec[] = [];
  let configSchema: ConfigSchema | undefined;
  const takeSchema = (s: ConfigSchema | undefined) => {
    if (s && s.attributes.length > 0 && configSchema === undefined) configSchema = s;
  };
  const warnings: Array<{ message: string; rule: string }> = [];

  if (categories.has("tool")) {
    const res = d.toolSchema;
    if (!res) throw new Error("ToolService.GetSchema gave no answer");
    tools = validateToolSchemas(name, res);
    previewSupported = new Set(res.previewSupported);
    for (const p of res.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...tools.slashCommands);
    takeSchema(res.configSchema);
    warnings.push(...tools.warnings);
  }
  if (categories.has("model")) {
    const caps = d.model;
    if (!caps) throw new Error("ModelService.GetCapabilities returned no capabilities");
    models = validateCapabilities(name, caps);
    for (const p of caps.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...caps.slashCommands);
    takeSchema(caps.configSchema);
    warnings.push(...models.warnings);
  }
  if (categories.has("context")) {
    context = d.context;
    if (!context) throw new Error("ContextService.GetCapabilities returned no capabilities");
    for (const p of context.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...context.slashCommands);
    takeSchema(context.configSchema);
  }
  for (const caps of [
    categories.has("memory") ? d.memory : undefined,
    categories.has("frontend") ? d.frontend : undefined,
    categories.has("widget") ? d.widget : undefined,
  ]) {
    if (!caps) continue;
    for (const p of caps.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...caps.slashCommands);
    takeSchema(caps.configSchema);
  }
  for (const w of warnings) options.log.warn(w.message, { provider: name, rule: w.rule });
  return {
    name,
    host,
    resolved,
    categories,
    producers: d.producers,
    order: textualOrder(options.config, name),
    ...(tools ? { tools } : {}),
    previewSupported,
    ...(models ? { models } : {}),
    ...(context ? { context } : {}),
    hookPoints: [...hookPoints],
    slashCommands,
    ...(configSchema ? { configSchema } : {}),
    config: {},
    dormant: options.dormant,
    ...(options.cacheKey ? { cacheKey: options.cacheKey } : {}),
    tool: host.client(ToolService),
    model: host.client(ModelService),
    contextClient: host.client(ContextService),
    hook: host.client(HookSubscriberService),
  };
}

async function refreshModels(
  p: LoadedProvider,
  options: Pick<LoadProvidersOptions, "log" | "describeTimeoutMs">,
): Promise<void> {
  if (!p.categories.has("model")) return;
  const timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
  const caps = (await p.model.getCapabilities({}, { timeoutMs })).capabilities;
  if (!caps)
    throw new Error(
      `provider "${p.name}": ModelService.GetCapabilities returned no capabilities after Configure`,
    );
  p.models = validateCapabilities(p.name, caps);
  for (const w of p.models.warnings) options.log.debug(w.message, { provider: p.name, rule: w.rule });
}

const CONFIGURABLE = ["tool", "model", "context", "memory", "frontend", "widget"] as const;

type ClientFactory = <S extends DescService>(service: S) => ServiceClient<S>;

async function configureProvider(p: LoadedProvider, options: LoadProvidersOptions): Promise<void> {
  const decoded = decodeProviderConfig(
    options.config,
    p.name,
    p.configSchema ?? { attributes: [] },
    options.env,
  );
  if (!decoded.ok) throw new ConfigError(decoded.diagnostics, `configuration of provider "${p.name}"`);
  p.config = decoded.config.values;
  p.configureOnLaunch = true;
  if (p.sandbox) {
    p.sandbox.config = p.config;
    // Its roots decide where it may write: a process launched before they were known restarts.
    if (p.sandbox.stale()) await p.host.shutdown();
  }
  if (p.dormant) return; // Configure goes out from the launch hook, before any other call
  await sendConfigure(p, (s) => p.host.client(s), options.log);
  p.configured = true;
}

/**
 * Sends the provider's decoded configuration to every category it serves. Also used
 * after a relaunch (with clients bound to the new process): a crashed plugin comes back
 * unconfigured.
 */
export async function sendConfigure(
  p: LoadedProvider,
  client: ClientFactory,
  log: KernelLogger,
): Promise<void> {
  const problems: string[] = [];
  for (const category of CONFIGURABLE) {
    if (!p.categories.has(category)) continue;
    const request = { config: p.config };
    const call = { timeoutMs: CONFIGURE_TIMEOUT_MS };
    const res =
      category === "tool"
        ? await client(ToolService).configure(request, call)
        : category === "model"
          ? await client(ModelService).configure(request, call)
          : category === "context"
            ? await client(ContextService).configure(request, call)
            : category === "memory"
              ? await client(MemoryService).configure(request, call)
              : category === "frontend"
                ? await client(FrontendService).configure(request, call)
                : await client(WidgetService).configure(request, call);
    for (const d of res.result?.diagnostics ?? []) {
      const where = d.attributePath.length > 0 ? ` (${d.attributePath.join(".")})` : "";
      const text = `${d.summary}${where}${d.detail ? `: ${d.detail}` : ""}`;
      if (d.severity === DiagnosticSeverity.WARNING) log.warn(`provider "${p.name}": ${text}`);
      else problems.push(text);
    }
  }
  if (problems.length > 0) throw new ProviderConfigureError(p.name, problems);
}
