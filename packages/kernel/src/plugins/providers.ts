// The providers a kernel runs with. Loading launches every declared provider (its
// category is only known once it answers Describe), asks each served category for its
// static description (GetSchema / GetCapabilities), validates those with the domain
// rules, runs the configuration's second pass against what actually loaded, decodes
// each provider block against its ConfigSchema and calls Configure.
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
import type { PluginHost } from "@pluggableharness/runtime";
import {
  type ValidatedCapabilities,
  type ValidatedToolset,
  validateCapabilities,
  validateToolSchemas,
} from "../domain/index.ts";
import type { KernelLogger } from "../log.ts";
import type { PluginPool, PoolOwner } from "./pool.ts";

/** One provider that launched and answered its category descriptions. */
export interface LoadedProvider {
  /** The required_providers local name. */
  readonly name: string;
  readonly host: PluginHost;
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
}

/** Whole-call deadline for the static description RPCs (they must be cheap and offline). */
const DESCRIBE_TIMEOUT_MS = 10_000;
const CONFIGURE_TIMEOUT_MS = 30_000;

export class ProviderRegistry {
  readonly #loaded = new Map<string, LoadedProvider>();
  readonly #statuses: ProviderStatus[] = [];

  private constructor() {}

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
          const p = await describeProvider(resolved, options);
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
        ...(p.configSchema ? { configSchema: p.configSchema } : {}),
      };
    }
    const diags = validateAgainstProviders(options.config, facts, options.env);
    // Unknown models are judged after Configure (below), when every model is known.
    for (const d of diags) {
      if (d.severity === "warning" && d.category !== "unknown_model") options.log.warn(formatDiagnostic(d));
    }
    if (errorsOf(diags).length > 0) throw new ConfigError(errorsOf(diags));

    // Decode and Configure.
    await Promise.all([...registry.#loaded.values()].map((p) => configureProvider(p, options)));

    // A model provider may serve models its configuration declares (an OpenAI-compatible
    // server's model list), so its capabilities are read again once it is configured.
    await Promise.all([...registry.#loaded.values()].map((p) => refreshModels(p, options)));
    const modelFacts: Record<string, LoadedProviders[string]> = {};
    for (const p of registry.#loaded.values()) {
      modelFacts[p.name] = {
        tools: p.tools ? [...p.tools.tools.keys()] : [],
        models: p.models ? [...p.models.models.keys()] : [],
        hookPoints: [...p.hookPoints],
      };
    }
    for (const d of validateAgainstProviders(options.config, modelFacts, options.env)) {
      if (d.category === "unknown_model") options.log.warn(formatDiagnostic(d));
    }

    for (const p of registry.#loaded.values()) {
      registry.#statuses.push({
        name: p.name,
        state: "loaded",
        source: p.resolved.source,
        origin: p.resolved.origin,
        executable: p.resolved.executable,
        categories: [...p.categories],
        producers: p.producers,
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

async function describeProvider(
  resolved: ResolvedProvider,
  options: LoadProvidersOptions,
): Promise<LoadedProvider> {
  const name = resolved.localName;
  const host = options.pool.acquire(name, resolved.executable, options.owner, {
    cwd: options.config.projectDir,
  });
  const description = await host.describe();
  const categories = new Set(description.categories);
  const timeoutMs = options.describeTimeoutMs ?? DESCRIBE_TIMEOUT_MS;
  const tool = host.client(ToolService);
  const model = host.client(ModelService);
  const contextClient = host.client(ContextService);
  const hook = host.client(HookSubscriberService);
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

  if (categories.has("tool")) {
    const res = await tool.getSchema({}, { timeoutMs });
    tools = validateToolSchemas(name, res);
    previewSupported = new Set(res.previewSupported);
    for (const p of res.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...tools.slashCommands);
    takeSchema(res.configSchema);
    for (const w of tools.warnings) options.log.warn(w.message, { provider: name, rule: w.rule });
  }
  if (categories.has("model")) {
    const caps = (await model.getCapabilities({}, { timeoutMs })).capabilities;
    if (!caps) throw new Error("ModelService.GetCapabilities returned no capabilities");
    models = validateCapabilities(name, caps);
    for (const p of caps.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...caps.slashCommands);
    takeSchema(caps.configSchema);
    for (const w of models.warnings) options.log.warn(w.message, { provider: name, rule: w.rule });
  }
  if (categories.has("context")) {
    context = (await contextClient.getCapabilities({}, { timeoutMs })).capabilities;
    if (!context) throw new Error("ContextService.GetCapabilities returned no capabilities");
    for (const p of context.supportedHookPoints) hookPoints.add(p);
    slashCommands.push(...context.slashCommands);
    takeSchema(context.configSchema);
  }
  if (categories.has("memory")) {
    const caps = (await host.client(MemoryService).getCapabilities({}, { timeoutMs })).capabilities;
    if (caps) {
      for (const p of caps.supportedHookPoints) hookPoints.add(p);
      slashCommands.push(...caps.slashCommands);
      takeSchema(caps.configSchema);
    }
  }
  if (categories.has("frontend")) {
    const caps = (await host.client(FrontendService).getCapabilities({}, { timeoutMs })).capabilities;
    if (caps) {
      for (const p of caps.supportedHookPoints) hookPoints.add(p);
      slashCommands.push(...caps.slashCommands);
      takeSchema(caps.configSchema);
    }
  }
  if (categories.has("widget")) {
    const caps = (await host.client(WidgetService).getCapabilities({}, { timeoutMs })).capabilities;
    if (caps) {
      for (const p of caps.supportedHookPoints) hookPoints.add(p);
      slashCommands.push(...caps.slashCommands);
      takeSchema(caps.configSchema);
    }
  }
  return {
    name,
    host,
    resolved,
    categories,
    producers: description.producers,
    order: textualOrder(options.config, name),
    ...(tools ? { tools } : {}),
    previewSupported,
    ...(models ? { models } : {}),
    ...(context ? { context } : {}),
    hookPoints: [...hookPoints],
    slashCommands,
    ...(configSchema ? { configSchema } : {}),
    config: {},
    tool,
    model,
    contextClient,
    hook,
  };
}

async function refreshModels(p: LoadedProvider, options: LoadProvidersOptions): Promise<void> {
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
