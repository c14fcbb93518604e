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
import { fromJson, type JsonObject, toJson } from "@bufbuild/protobuf";
import {
  type AgentConfig,
  ConfigError,
  type ConfigureProblem,
  configureDiagnostics,
  decodeProviderConfig,
  errorAt,
  errorsOf,
  formatDiagnostic,
  type LoadedProviders,
  type ResolvedProvider,
  type SecretMask,
  unavailableReason,
  validateAgainstProviders,
} from "@pluggableharness/config";
import type { HookPoint, ProducerRef } from "@pluggableharness/protocol/common";
import { type ConfigSchema, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import type { ContextCapabilities } from "@pluggableharness/protocol/context";
import type { MemoryCapabilities } from "@pluggableharness/protocol/memory";
import type { SlashCommandSpec } from "@pluggableharness/protocol/slashcommand";
import { type GetSchemaResponse, GetSchemaResponseSchema } from "@pluggableharness/protocol/tool";
import type { WidgetFeed } from "@pluggableharness/protocol/widget";
import { freshBundle, type PluginIsolation, type PluginTransportHost } from "@pluggableharness/runtime";
import {
  type ValidatedCapabilities,
  type ValidatedToolset,
  validateCapabilities,
  validateToolSchemas,
} from "../domain/index.ts";
import type { KernelLogger } from "../log.ts";
import { type ClientFactory, grpcPorts, type TraceCarrierSource } from "../providers/grpc.ts";
import { InProcessHost, type InProcessPluginFactory } from "../providers/in-process.ts";
import type { ProviderPorts } from "../providers/ports.ts";
import { KERNEL_VERSION } from "../version.ts";
import { lintContextOrder } from "./context-lint.ts";
import {
  configDigest,
  DescribeCache,
  keptAnswerDigest,
  type ProviderDescription,
  sourcesFingerprint,
  workspaceDependencyDigest,
} from "./describe-cache.ts";
import type { PluginPool, PoolOwner } from "./pool.ts";
import { PluginSandboxState } from "./sandbox.ts";

/** What runs a provider: a plugin host of the runtime, or the in-process transport. */
export type ProviderHost = PluginTransportHost | InProcessHost;

/** One provider that launched and answered its category descriptions. */
export interface LoadedProvider {
  /** The required_providers local name. */
  readonly name: string;
  readonly host: ProviderHost;
  readonly resolved: ResolvedProvider;
  /** Categories served, as the runtime names them ("model", "tool", "context", "hook", ...). */
  readonly categories: ReadonlySet<string>;
  /** Describe answers per category. */
  readonly producers: Readonly<Record<string, ProducerRef>>;
  /** Textual position in agent.hcl (byte offset of its provider block, else its required_providers entry). */
  readonly order: number;
  /** Read again after Configure when the provider's operations come from its configuration. */
  tools?: ValidatedToolset;
  /** Operations whose Preview is implemented. */
  previewSupported: ReadonlySet<string>;
  /** GetSchemaResponse.operations_from_config: the operations exist once Configure has run. */
  readonly operationsFromConfig?: boolean;
  /** Its post-Configure operations were taken from the describe cache (operations_cacheable). */
  operationsKept?: boolean;
  /** Refreshed after Configure: a provider may serve models its configuration declares. */
  models?: ValidatedCapabilities;
  readonly context?: ContextCapabilities;
  /** MemoryService.GetCapabilities, for a memory provider (recalled at context-assemble). */
  readonly memory?: MemoryCapabilities;
  /** WidgetCapabilities.feed: what a widget reads from the hooks it observes (loop/session/widgets.ts). */
  readonly widgetFeed?: WidgetFeed;
  /** supported_hook_points from every category description. */
  readonly hookPoints: readonly HookPoint[];
  /** Refreshed with the operations of an operations_from_config tool provider. */
  slashCommands: readonly SlashCommandSpec[];
  readonly configSchema?: ConfigSchema;
  /** The decoded Configure payload. Holds resolved secrets: never log or persist it. */
  config: JsonObject;
  /** Cached answer to "does this model provider implement CountTokens". */
  countTokensSupported?: boolean;
  /** Configure succeeded once; a relaunched process gets the same configuration again. */
  configured?: boolean;
  /** What its last Configure warned about (the MCP bridge says why its server did not start). */
  configureWarnings?: readonly string[];
  /**
   * Why a provider whose operations come from its configuration offers none this session
   * (an MCP server that cannot start): the session runs without them.
   */
  unavailable?: string;
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
  /** How the kernel calls it, per category, whatever the transport (providers/ports.ts). */
  readonly ports: ProviderPorts;
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
  /** How a loaded provider runs: its own process, a worker thread of the kernel or of a sandbox host. */
  readonly isolation?: PluginIsolation | "in_process";
  readonly error?: string;
  /** Loaded, but its operations are missing this session, and why (an MCP server that did not start). */
  readonly unavailable?: string;
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
  /** The ERROR diagnostics, structured (configureDiagnostics positions them in agent.hcl). */
  readonly problems: readonly ConfigureProblem[];
  constructor(provider: string, problems: readonly ConfigureProblem[]) {
    super(
      `provider "${provider}" rejected its configuration:\n${problems.map((p) => `  - ${problemText(p)}`).join("\n")}`,
    );
    this.name = "ProviderConfigureError";
    this.provider = provider;
    this.problems = problems;
  }
}

function problemText(d: ConfigureProblem): string {
  const where = d.attributePath.length > 0 ? ` (${d.attributePath.join(".")})` : "";
  return `${d.summary}${where}${d.detail ? `: ${d.detail}` : ""}`;
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
  /**
   * Providers to run in the kernel's thread instead of launching them (tests, embedding;
   * providers/in-process.ts), by local name. They are never sandboxed or cached.
   */
  readonly inProcess?: Readonly<Record<string, InProcessPluginFactory>>;
  /** Runs every first-party provider with this isolation instead of its configured one. */
  readonly isolation?: PluginIsolation;
  /** Every withheld value (docs/security/mcp.md): masked in what a provider given one says. */
  readonly secretMask?: SecretMask;
  /** The current span's trace context, sent with every call to a launched plugin. */
  readonly traceCarrier?: TraceCarrierSource;
}

/**
 * V8 flags for first-party plugin processes: a 1 MiB young generation (the default grows
 * to 16 MiB per semi-space) keeps each plugin's resident memory lower at no measurable
 * cost in speed; see docs/decisions/performance.md.
 */
export const FIRST_PARTY_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];

/**
 * Heap limits of a model provider's worker thread. Parsing a streamed answer allocates a
 * few small objects per SSE frame; in the 2 MiB young generation every worker gets, the
 * scavenger ran so often that it took about a third of the worker's CPU while streaming
 * (20,000 deltas: 146 ms of worker CPU at 2 MiB, 101-110 ms at 8 MiB). Only model
 * providers get the larger one, so idle tool workers keep their small footprint; see
 * docs/decisions/streaming.md.
 */
export const MODEL_WORKER_LIMITS = { maxYoungGenerationSizeMb: 8 } as const;

/** Diagnostics about a profile's model candidates, judged once the models are final. */
const MODEL_REFERENCE_CATEGORIES: ReadonlySet<string> = new Set(["unknown_model", "unsupported_parameter"]);
/** Diagnostics about a profile's tool patterns, judged once every provider's operations are final. */
const TOOL_REFERENCE_CATEGORIES: ReadonlySet<string> = new Set(["unknown_tool"]);

/** Whole-call deadline for the static description RPCs (they must be cheap and offline). */
const DESCRIBE_TIMEOUT_MS = 10_000;
const CONFIGURE_TIMEOUT_MS = 30_000;

export class ProviderRegistry {
  #projectDir = "";
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
        if (p.operationsKept) await this.#checkKept(p);
        p.dormant = false;
      } catch (err) {
        p.activation = undefined;
        throw err;
      }
    })();
    return p.activation;
  }

  /**
   * A bridge declared from its kept operations, now running: if it answers otherwise (a
   * change its sources' stamps missed), this session keeps what it declared and the next
   * start asks the bridge again.
   */
  async #checkKept(p: LoadedProvider): Promise<void> {
    const live = await p.ports.tool.getSchema({}, { timeoutMs: this.#timeoutMs });
    const names = (xs: Iterable<string>) => [...xs].sort().join("\u0000");
    const same =
      names(live.tools.map((t) => t.name)) === names(p.tools?.tools.keys() ?? []) &&
      names(live.slashCommands.map((c) => c.name)) === names(p.tools?.slashCommands.map((c) => c.name) ?? []);
    if (same || !this.#cache || !p.cacheKey) return;
    this.#cache.dropOperations(p.resolved.source, p.cacheKey, operationsDigest(p, this.#projectDir));
    this.#log?.warn(
      `provider "${p.name}" offers other operations than it did when they were cached; the next start asks it again`,
      { provider: p.name },
    );
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
    await sendConfigure(p, grpcPorts(name, client), this.#log!);
    p.configured = true;
    recordAccepted(p, this.#cache);
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
    // Tolerated or not, a hook block whose subscriber did not load is an error: skipping it
    // would run the session without the hook (a veto or an audit) its author relies on.
    const hookDiags = options.config.hooks.flatMap((h) => {
      const failed = failures.find((f) => f.provider === h.provider);
      if (!failed) return [];
      return [
        errorAt(
          "unknown_provider",
          "Hook subscriber not loaded",
          `hook "${h.point}" names "${h.provider}", which failed to load (${failed.message}); the hook cannot run without it. Fix the provider or remove the hook block.`,
          h.providerRange,
        ),
      ];
    });
    if (hookDiags.length > 0) throw new ConfigError(hookDiags);

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
      (d) => !MODEL_REFERENCE_CATEGORIES.has(d.category) && !TOOL_REFERENCE_CATEGORIES.has(d.category),
    );
    for (const d of diags) if (d.severity === "warning") options.log.warn(formatDiagnostic(d));
    if (errorsOf(diags).length > 0) throw new ConfigError(errorsOf(diags));

    // Decode every block; Configure what is running (a dormant provider gets it at launch).
    await Promise.all([...registry.#loaded.values()].map((p) => configureProvider(p, options)));

    // A model provider may serve models its configuration declares (an OpenAI-compatible
    // server's model list), so its capabilities are read again once it is configured.
    registry.#config = options.config;
    registry.#env = options.env;
    registry.#log = options.log;
    registry.#cache = options.describeCache;
    registry.#projectDir = options.config.projectDir;
    registry.#timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
    // A bridge's operations exist only once it runs configured: it is not left dormant
    // (one described in a worker that belongs in the sandbox launches now), unless the
    // cache kept what it answered for this configuration (operations_cacheable). Nor is a
    // frontend plugin: it serves its users (the web UI's HTTP server) from its Configure
    // on, and no session call would ever wake it.
    await Promise.all(
      [...registry.#loaded.values()]
        .filter(
          (p) => p.dormant && ((p.operationsFromConfig && !p.operationsKept) || p.categories.has("frontend")),
        )
        .map(async (p) => {
          await p.host.start();
          // The launch hook reaches this registry only once load() has returned: configure
          // it here (the bridge keeps its server when the same configuration comes twice).
          await sendConfigure(p, p.ports, options.log);
          p.configured = true;
          p.dormant = false;
        }),
    );
    const running = [...registry.#loaded.values()].filter((p) => !p.dormant);
    await Promise.all(running.map((p) => refreshModels(p, options)));
    // Likewise a bridge's operations (an MCP server's tools) exist once it is configured.
    await Promise.all(running.map((p) => refreshTools(p, options)));
    for (const p of [
      ...running,
      ...[...registry.#loaded.values()].filter((q) => q.dormant && q.operationsKept),
    ]) {
      const why = unavailableReason(
        !!p.operationsFromConfig,
        p.tools?.tools.size ?? 0,
        p.configureWarnings ?? [],
      );
      // The reason may quote what the server printed (its environment, a token): it is
      // shown on the terminal and by `agent mcp list`, so it is masked like any output.
      if (why !== undefined) p.unavailable = options.secretMask ? options.secretMask.mask(why) : why;
    }
    checkToolReferences(options.config, [...registry.#loaded.values()], options);
    registry.#checkModelReferences(running);
    lintContextOrder(
      registry.contextAssemblers().map((p) => ({ name: p.name, stability: p.context?.stability })),
      options.log,
    );

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
        ...(p.unavailable !== undefined ? { unavailable: p.unavailable } : {}),
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

  /**
   * Everything that takes part in context-assemble, in declaration order: context providers
   * (Contribute) and memory providers (Recall, translated into sections).
   */
  contextAssemblers(): LoadedProvider[] {
    return this.all().filter(
      (p) => (p.categories.has("context") && p.context !== undefined) || p.memory !== undefined,
    );
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

/**
 * The describe-cache key of a provider as a kernel with these options would run it
 * (undefined: not cacheable). `agent validate` and `agent providers` read the entries the
 * kernel writes, and write the same, under this key.
 */
export function describeCacheKey(
  resolved: ResolvedProvider,
  options: Pick<LoadProvidersOptions, "installationRoot" | "bundles" | "describeCache">,
): string | undefined {
  const { codeDigest } = launchTarget(resolved, options);
  return options.describeCache && codeDigest
    ? DescribeCache.key(resolved, codeDigest, KERNEL_VERSION)
    : undefined;
}

/** What runs for a resolved provider: its fresh bundle (first party) or its executable. */
function launchTarget(
  resolved: ResolvedProvider,
  options: Pick<LoadProvidersOptions, "installationRoot" | "bundles" | "describeCache">,
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
 * The transport a provider runs on (docs/decisions/plugin-runtime.md, "Transports", isolation and
 * the plugin sandbox). Anything but a first-party provider: its own process, always. A
 * provider the kernel puts in the plugin sandbox (a tool provider, unless settings.sandbox
 * is "off" or the sandbox cannot run under "best_effort"): a worker thread of the sandbox
 * host for its profile ("hosted"), because a thread of the kernel's own process cannot be
 * confined by bubblewrap; a process of its own if that was asked. Any other first-party
 * provider: what was requested, else a worker thread.
 */
export function providerTransport(
  resolved: Pick<ResolvedProvider, "origin">,
  requested: PluginIsolation | undefined,
  sandboxed: boolean,
): { isolation: PluginIsolation } {
  if (resolved.origin !== "first_party") return { isolation: "process" };
  if (sandboxed) return { isolation: requested === "process" ? "process" : "hosted" };
  return { isolation: requested ?? "worker" };
}

/** The kernel would run this provider's process in a sandbox (a "required" sandbox that cannot run counts). */
function wouldSandbox(sandbox: PluginSandboxState): boolean {
  try {
    return sandbox.desired() !== undefined;
  } catch {
    return true;
  }
}

async function loadProvider(
  resolved: ResolvedProvider,
  options: LoadProvidersOptions,
): Promise<LoadedProvider> {
  const name = resolved.localName;
  const inProcess = options.inProcess?.[name];
  if (inProcess) {
    const host = new InProcessHost(name, inProcess, {
      callbacks: (peer) => options.owner.callbacks(peer) as Record<string, unknown>,
      pluginLog: (record) => options.owner.pluginLog(record),
    });
    const live = await fetchDescription(name, host, options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS);
    return buildLoaded(resolved, host, live, { ...options, dormant: false });
  }
  const target = launchTarget(resolved, options);
  const sandbox = new PluginSandboxState(resolved, options.config, options.env, options.log);
  const cache = options.describeCache;
  const cacheKey = describeCacheKey(resolved, options);
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
  const acquire = (isolation: PluginIsolation) =>
    options.pool.acquire(name, target.command, options.owner, {
      cwd: options.config.projectDir,
      ...(resolved.origin === "first_party" ? { nodeArgs: FIRST_PARTY_NODE_FLAGS } : {}),
      // Known from the describe cache; a provider described for the first time starts with
      // the default limits and gets these from its next session on.
      ...(sandbox.categories?.includes("model") ? { resourceLimits: MODEL_WORKER_LIMITS } : {}),
      sandbox: sandbox.forLaunch,
      isolation,
    });
  let host = acquire(where.isolation);
  // A process some other kernel already runs (a shared pool) is configured here, not lazily.
  // Operations that come from the configuration cannot be known without running it, unless
  // the bridge says they depend on nothing else (its kept answer is read at Configure).
  const bridge = entry?.toolSchema?.operationsFromConfig;
  const cached =
    entry && !host.running && (!bridge || entry.toolSchema?.operationsCacheable) ? entry : undefined;
  if (cached) {
    try {
      return { ...buildLoaded(resolved, host, cached, { ...options, cacheKey, dormant: true }), sandbox };
    } catch {
      // an entry the rules now reject: describe the provider live
      cache!.invalidate(resolved.source, cacheKey!);
    }
  }
  const live = await fetchDescription(name, host, options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS);
  if (cacheKey) cache!.write(resolved.source, cacheKey, live);
  sandbox.isTool = live.categories.includes("tool");
  sandbox.categories = live.categories;
  if (live.toolSchema) sandbox.tools = live.toolSchema;
  let dormant = false;
  const after = providerTransport(resolved, requested, wouldSandbox(sandbox));
  if (host.isolation !== after.isolation) {
    // Described in a worker, it belongs in the sandbox: its sandbox host from its first use on.
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
async function fetchDescription(
  name: string,
  host: ProviderHost,
  timeoutMs: number,
): Promise<ProviderDescription> {
  const description = await host.describe();
  const ports = portsOf(name, host);
  const categories = new Set(description.categories);
  const call = { timeoutMs };
  const d: {
    -readonly [K in keyof ProviderDescription]: ProviderDescription[K];
  } = { categories: description.categories, producers: description.producers };
  const [toolSchema, model, context, memory, frontend, widget] = await Promise.all([
    categories.has("tool") ? ports.tool.getSchema({}, call) : undefined,
    categories.has("model") ? ports.model.getCapabilities({}, call) : undefined,
    categories.has("context") ? ports.context.getCapabilities({}, call) : undefined,
    categories.has("memory") ? ports.memory.getCapabilities({}, call) : undefined,
    categories.has("frontend") ? ports.frontend.getCapabilities({}, call) : undefined,
    categories.has("widget") ? ports.widget.getCapabilities({}, call) : undefined,
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
  host: ProviderHost,
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
    ...(categories.has("memory") && d.memory ? { memory: d.memory } : {}),
    ...(categories.has("widget") && d.widget?.feed ? { widgetFeed: d.widget.feed } : {}),
    hookPoints: [...hookPoints],
    slashCommands,
    ...(configSchema ? { configSchema } : {}),
    ...(d.toolSchema?.operationsFromConfig ? { operationsFromConfig: true } : {}),
    config: {},
    dormant: options.dormant,
    ...(options.cacheKey ? { cacheKey: options.cacheKey } : {}),
    ports: portsOf(name, host, options.traceCarrier),
  };
}

/** The category ports over whatever runs the provider. */
function portsOf(name: string, host: ProviderHost, carrier?: TraceCarrierSource): ProviderPorts {
  return host instanceof InProcessHost ? host.ports : grpcPorts(name, (s) => host.client(s), carrier);
}

async function refreshModels(
  p: LoadedProvider,
  options: Pick<LoadProvidersOptions, "log" | "describeTimeoutMs">,
): Promise<void> {
  if (!p.categories.has("model")) return;
  const timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
  const caps = (await p.ports.model.getCapabilities({}, { timeoutMs })).capabilities;
  if (!caps)
    throw new Error(
      `provider "${p.name}": ModelService.GetCapabilities returned no capabilities after Configure`,
    );
  p.models = validateCapabilities(p.name, caps);
  for (const w of p.models.warnings) options.log.debug(w.message, { provider: p.name, rule: w.rule });
}

/**
 * A tool provider whose operations come from its configuration (operations_from_config) is
 * asked for them again once configured; the answer passes the same rules as at load.
 */
async function refreshTools(
  p: LoadedProvider,
  options: Pick<
    LoadProvidersOptions,
    "log" | "describeTimeoutMs" | "secretMask" | "describeCache" | "config"
  >,
): Promise<void> {
  if (!p.categories.has("tool") || !p.operationsFromConfig) return;
  const timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
  let res = await p.ports.tool.getSchema({}, { timeoutMs });
  // Operations described from a configuration that holds a secret (an MCP server's tools)
  // reach every model request: what they say is masked like the provider's output.
  const mask = options.secretMask;
  const secret = !!mask && !mask.empty && mask.contains(JSON.stringify(p.config));
  // Kept for the next start only from a configuration without secrets, so nothing derived
  // from one is written to disk.
  if (res.operationsCacheable && !secret) keepOperations(p, res, options);
  if (mask && secret) {
    // A name cannot be masked (it is how the operation is called): one that holds a secret
    // leaves the operation out.
    const named = res.tools.filter((t) => mask.contains(t.name));
    if (named.length > 0) {
      options.log.warn(
        `provider "${p.name}": ${named.length} operation(s) left out: their names hold a secret`,
      );
      res.tools = res.tools.filter((t) => !named.includes(t));
    }
    res = fromJson(GetSchemaResponseSchema, mask.maskJson(toJson(GetSchemaResponseSchema, res)));
  }
  const before = new Set(p.tools?.slashCommands ?? []);
  p.tools = validateToolSchemas(p.name, res);
  p.previewSupported = new Set(res.previewSupported);
  // Its slash commands may come from configuration too (user commands from files); those
  // of its other categories stay.
  p.slashCommands = [...p.tools.slashCommands, ...p.slashCommands.filter((c) => !before.has(c))];
  for (const w of p.tools.warnings) options.log.warn(w.message, { provider: p.name, rule: w.rule });
}

/** Stores a cacheable bridge's post-Configure answer under its entry and accepted configuration. */
function keepOperations(
  p: LoadedProvider,
  res: GetSchemaResponse,
  options: Pick<LoadProvidersOptions, "describeCache" | "config">,
): void {
  const cache = options.describeCache;
  if (!cache || !p.cacheKey || !p.configured) return;
  // The accepted digest tells sensitive values apart only as set or not: operations
  // described under one secret must not stand in for another's.
  const sensitive = (p.configSchema?.attributes ?? []).filter((a) => a.sensitive).map((a) => a.name);
  if (
    sensitive.some((name) => p.config[name] !== undefined && p.config[name] !== null && p.config[name] !== "")
  )
    return;
  const digest = digestOf(p);
  // What it answered is only worth keeping for a configuration its Configure accepted.
  cache.accept(p.resolved.source, p.cacheKey, digest);
  cache.writeOperations(p.resolved.source, p.cacheKey, operationsDigest(p, options.config.projectDir), {
    schema: res,
    fingerprint: sourcesFingerprint(res.operationSources),
    warnings: [...(p.configureWarnings ?? [])],
  });
}

/** What kept operations are filed under (describe-cache.ts, keptAnswerDigest). */
function operationsDigest(p: LoadedProvider, projectDir: string): string {
  return keptAnswerDigest(digestOf(p), projectDir);
}

/**
 * A dormant cacheable bridge takes its operations from the answer kept for this exact
 * build and configuration, while the paths they were read from are unchanged; it then
 * starts at its first use like any provider. False: it must be launched to be asked.
 */
function useKeptOperations(p: LoadedProvider, options: LoadProvidersOptions): boolean {
  const cache = options.describeCache;
  if (!cache || !p.cacheKey) return false;
  const kept = cache.readOperations(
    p.resolved.source,
    p.cacheKey,
    operationsDigest(p, options.config.projectDir),
  );
  if (!kept || kept.fingerprint !== sourcesFingerprint(kept.schema.operationSources)) return false;
  try {
    const tools = validateToolSchemas(p.name, kept.schema);
    const before = new Set(p.tools?.slashCommands ?? []);
    p.tools = tools;
    p.previewSupported = new Set(kept.schema.previewSupported);
    p.slashCommands = [...tools.slashCommands, ...p.slashCommands.filter((c) => !before.has(c))];
  } catch {
    cache.dropOperations(p.resolved.source, p.cacheKey, operationsDigest(p, options.config.projectDir));
    return false;
  }
  // Its Configure warnings (a command file that is not a command) are said at every start.
  for (const w of kept.warnings) options.log.warn(`provider "${p.name}": ${w}`);
  p.configureWarnings = kept.warnings;
  p.operationsKept = true;
  return true;
}

/** Profile tool patterns against every provider's final operations. */
function checkToolReferences(
  config: AgentConfig,
  providers: readonly LoadedProvider[],
  options: Pick<LoadProvidersOptions, "log" | "env">,
): void {
  const facts: Record<string, LoadedProviders[string]> = {};
  for (const p of providers)
    facts[p.name] = {
      tools: p.tools ? [...p.tools.tools.keys()] : [],
      slashCommands: p.slashCommands.map((c) => c.name),
      ...(p.unavailable !== undefined ? { unavailable: p.unavailable } : {}),
    };
  // Slash commands are checked again here: a provider configured just now may have
  // declared more (the collision check at load saw only the cached ones).
  const diags = validateAgainstProviders(config, facts, options.env).filter(
    (d) => TOOL_REFERENCE_CATEGORIES.has(d.category) || d.summary === "Slash command declared twice",
  );
  for (const d of diags) if (d.severity === "warning") options.log.warn(formatDiagnostic(d));
  if (errorsOf(diags).length > 0) throw new ConfigError(errorsOf(diags));
}

const CONFIGURABLE = ["tool", "model", "context", "memory", "frontend", "widget"] as const;

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
  if (p.dormant) {
    // Configure goes out from the launch hook, before any other call, once this exact
    // configuration is known to be accepted; otherwise it is checked now, so `agent run`
    // refuses at start what `agent validate` refuses (describe-cache.ts, "accepted").
    if (accepted(p, options.describeCache)) {
      if (p.operationsFromConfig) useKeptOperations(p, options);
      return;
    }
    // A kernel that tolerates failures (`agent memory`, which calls no model) leaves the
    // check to first use, as a provider it never uses cannot stop it.
    if (options.tolerateFailures) return;
    await p.host.start();
    p.dormant = false;
  }
  try {
    await sendConfigure(p, p.ports, options.log);
  } catch (err) {
    if (err instanceof ProviderConfigureError)
      throw new ConfigError(
        configureDiagnostics(options.config, p.name, err.problems),
        `configuration of provider "${p.name}"`,
      );
    throw err;
  }
  p.configured = true;
  recordAccepted(p, options.describeCache);
}

function digestOf(p: LoadedProvider): string {
  return acceptedDigest(p.config, p.configSchema);
}

/** The digest a provider's decoded configuration is remembered under once Configure accepts it. */
export function acceptedDigest(values: JsonObject, schema: ConfigSchema | undefined): string {
  const sensitive = new Set((schema?.attributes ?? []).filter((a) => a.sensitive).map((a) => a.name));
  return configDigest(values, sensitive);
}

function accepted(p: LoadedProvider, cache: DescribeCache | undefined): boolean {
  return !!cache && !!p.cacheKey && cache.accepted(p.resolved.source, p.cacheKey, digestOf(p));
}

function recordAccepted(p: LoadedProvider, cache: DescribeCache | undefined): void {
  if (cache && p.cacheKey) cache.accept(p.resolved.source, p.cacheKey, digestOf(p));
}

/**
 * Sends the provider's decoded configuration to every category it serves. Also used
 * after a relaunch (with ports bound to the new process): a crashed plugin comes back
 * unconfigured.
 */
export async function sendConfigure(
  p: LoadedProvider,
  ports: ProviderPorts,
  log: KernelLogger,
): Promise<void> {
  const problems: ConfigureProblem[] = [];
  const warnings: string[] = [];
  for (const category of CONFIGURABLE) {
    if (!p.categories.has(category)) continue;
    const request = { config: p.config };
    const call = { timeoutMs: CONFIGURE_TIMEOUT_MS };
    const res = await ports[category].configure(request, call);
    for (const d of res.result?.diagnostics ?? []) {
      const problem: ConfigureProblem = {
        severity: d.severity === DiagnosticSeverity.WARNING ? "warning" : "error",
        attributePath: [...d.attributePath],
        summary: d.summary,
        detail: d.detail,
      };
      if (problem.severity === "warning") {
        log.warn(`provider "${p.name}": ${problemText(problem)}`);
        warnings.push(d.detail || d.summary);
      } else problems.push(problem);
    }
  }
  p.configureWarnings = warnings;
  if (problems.length > 0) throw new ProviderConfigureError(p.name, problems);
}
