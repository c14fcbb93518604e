// The ModelService scaffold: everything a vendor adapter would otherwise repeat —
// capabilities from the catalog, Configure diagnostics and user-declared models, the
// request checks before any network traffic, classified errors as in-band `error`
// events, cancellation as a quiet end, secrets redacted from every error and log line.
// A provider's main.ts is then `serveModelProvider(adapter)`.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { type PluginContext, StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import type { ConfigDiagnostic } from "@pluggableharness/protocol/config";
import {
  type CountTokensRequest,
  ModelService,
  type StreamCompletionRequest,
} from "@pluggableharness/protocol/model";
import { type CatalogModel, parseCustomModels, toModelSpec } from "./catalog.ts";
import { type AttributeDef, configSchema, hasErrors, makeRedactor, parseConfig } from "./config.ts";
import { checkContentSupport, type ProviderIdentity } from "./content.ts";
import { isAbortError, ModelFailure } from "./errors.ts";
import type { StreamEventInit } from "./events.ts";
import { CancelledError } from "./http.ts";
import { mergeBufferedDeltas } from "./merge.ts";

export type Logger = PluginContext["log"];

/** The attribute every provider gets for declaring models its catalog lacks. */
export const MODELS_JSON_ATTRIBUTE: AttributeDef = {
  name: "models_json",
  kind: "string",
  description:
    'Extra models as a JSON object keyed by model id, e.g. {"my-model": {"like": "<built-in id>"}} or a full ' +
    "declaration (context_window, max_output_tokens, pricing, ...). See the provider README.",
};

/** What a call into the adapter gets. */
export interface AdapterCall<S> {
  state: S;
  model: CatalogModel;
  signal: AbortSignal;
  log: Logger;
  /** Removes every configured secret from a text. */
  redact: (text: string) => string;
  self: ProviderIdentity;
}

export interface ConfigureContext {
  /** Adds a diagnostic; any error rejects the configuration. */
  report(d: ConfigDiagnostic): void;
  log: Logger;
}

export interface ModelAdapter<S> {
  /** package.json of the provider (Describe identity and the provider's declared name). */
  packageJson: URL | string;
  /** The provider's declared name, as in package.json's pluggableharness.name. */
  name: string;
  /** Vendor attributes; `models_json` is added by the scaffold. */
  attributes: readonly AttributeDef[];
  /** The built-in catalog (never needs the network). */
  builtins: readonly CatalogModel[];
  /** True for model ids of this vendor (decides whose thinking blocks are whose). */
  ownsModel(modelId: string): boolean;
  /** Builds the adapter's state from checked values; report() more diagnostics if needed. */
  configure(values: Record<string, JsonValue>, ctx: ConfigureContext): S;
  /**
   * Models the configuration itself declares (e.g. a compatible server's model list), added
   * after the built-ins; `models_json` entries with the same id still win.
   */
  declaredModels?(state: S): readonly CatalogModel[];
  /** Pricing for `models_json` entries that declare neither "pricing" nor "like". */
  defaultPricing?(values: Record<string, JsonValue>): CatalogModel["pricing"] | undefined;
  stream(request: StreamCompletionRequest, call: AdapterCall<S>): AsyncIterable<StreamEventInit>;
  /** Exact count with the vendor's counter; absent = UNIMPLEMENTED (the kernel's heuristic applies). */
  countTokens?(request: CountTokensRequest, call: AdapterCall<S>): Promise<number | bigint>;
  /** Called on plugin shutdown and when a new configuration replaces this state. */
  dispose?(state: S): void | Promise<void>;
}

interface Configured<S> {
  state: S;
  models: Map<string, CatalogModel>;
  redact: (text: string) => string;
}

/** The ModelService implementation for an adapter (exported for in-process tests). */
export function createModelService<S>(adapter: ModelAdapter<S>) {
  const attributes = [...adapter.attributes, MODELS_JSON_ATTRIBUTE];
  const schema = configSchema(attributes);
  let current: Configured<S> | undefined;
  const self: ProviderIdentity = {
    name: adapter.name,
    ownsModel: (id) => adapter.ownsModel(id) || (current?.models.has(id) ?? false),
  };

  const catalog = (): CatalogModel[] => (current ? [...current.models.values()] : [...adapter.builtins]);

  function resolve(modelId: string, redact: (t: string) => string) {
    if (!current)
      throw new ModelFailure("invalid_request", "the provider has not been configured", { retryable: false });
    const model = current.models.get(modelId);
    if (!model) {
      throw new ModelFailure(
        "invalid_request",
        redact(`unknown model "${modelId}"; this provider serves ${[...current.models.keys()].join(", ")}`),
        { retryable: false },
      );
    }
    return { configured: current, model };
  }

  /** What the adapter is handed for one call of `modelId` (its configured state, the model, the call's signal and log). */
  function callFor(modelId: string, redact: (t: string) => string, ctx: PluginContext) {
    const { configured, model } = resolve(modelId, redact);
    const call: AdapterCall<S> = {
      state: configured.state,
      model,
      signal: ctx.signal,
      log: ctx.log,
      redact: configured.redact,
      self,
    };
    return { model, call };
  }

  const failureFrom = (err: unknown, redact: (t: string) => string): ModelFailure =>
    err instanceof ModelFailure
      ? err
      : new ModelFailure(
          "unknown",
          redact(`provider failure: ${err instanceof Error ? err.message : String(err)}`),
          {
            retryable: false,
          },
        );

  return {
    getCapabilities: () => ({
      capabilities: {
        models: catalog().map(toModelSpec),
        configSchema: schema,
        slashCommands: [],
        supportedHookPoints: [],
      },
    }),

    configure: async (req: { config?: JsonObject }, ctx: PluginContext) => {
      const parsed = parseConfig(attributes, req.config);
      const diagnostics = [...parsed.diagnostics];
      const custom = parseCustomModels(
        "models_json",
        typeof parsed.values["models_json"] === "string"
          ? (parsed.values["models_json"] as string)
          : undefined,
        adapter.builtins,
        { pricing: hasErrors(diagnostics) ? undefined : adapter.defaultPricing?.(parsed.values) },
      );
      diagnostics.push(...custom.diagnostics);
      let state: S | undefined;
      if (!hasErrors(diagnostics)) {
        try {
          state = adapter.configure(parsed.values, { report: (d) => diagnostics.push(d), log: ctx.log });
        } catch (err) {
          const redact = makeRedactor(parsed.secrets);
          ctx.log.error("configure failed", { error: redact(String(err)) });
          throw new StatusError(13, redact(`configure failed: ${(err as Error).message}`));
        }
      }
      if (hasErrors(diagnostics) || state === undefined) {
        ctx.log.warn("configuration rejected", { diagnostics: diagnostics.map((d) => d.summary) });
        return { result: { diagnostics } };
      }
      const previous = current;
      const models = new Map(adapter.builtins.map((m) => [m.id, m] as const));
      for (const m of adapter.declaredModels?.(state) ?? []) models.set(m.id, m);
      for (const m of custom.models) models.set(m.id, m);
      current = { state, models, redact: makeRedactor(parsed.secrets) };
      if (previous) await adapter.dispose?.(previous.state);
      ctx.log.info("configured", { models: models.size, user_declared: custom.models.length });
      return { result: { diagnostics } };
    },

    async *streamCompletion(
      req: StreamCompletionRequest,
      ctx: PluginContext,
    ): AsyncGenerator<StreamEventInit> {
      const redact = current?.redact ?? ((t: string) => t);
      const started = Date.now();
      let events = 0;
      try {
        const { model, call } = callFor(req.modelId, redact, ctx);
        checkContentSupport(model, req.messages);
        // Deltas already buffered travel as one event (merge.ts); none waits for the network.
        for await (const event of mergeBufferedDeltas(adapter.stream(req, call))) {
          if (ctx.signal.aborted) return;
          events++;
          yield event;
        }
        ctx.log.debug("completion finished", { model: req.modelId, events, ms: Date.now() - started });
      } catch (err) {
        if (err instanceof CancelledError || isAbortError(err, ctx.signal) || ctx.signal.aborted) {
          ctx.log.debug("completion cancelled", { model: req.modelId, events });
          return;
        }
        const failure = failureFrom(err, redact);
        const level = failure.category === "unknown" ? "error" : "warn";
        ctx.log[level]("completion failed", {
          model: req.modelId,
          category: failure.category,
          retryable: failure.retryable,
          http_status: failure.httpStatus,
          vendor_code: failure.vendorCode === undefined ? undefined : redact(failure.vendorCode),
          error: redact(failure.message),
        });
        yield { event: { case: "error", value: failure.toProto(redact) } };
      }
    },

    ...(adapter.countTokens
      ? {
          countTokens: async (req: CountTokensRequest, ctx: PluginContext) => {
            const redact = current?.redact ?? ((t: string) => t);
            try {
              const count = await adapter.countTokens!(req, callFor(req.modelId, redact, ctx).call);
              return { count: BigInt(count) };
            } catch (err) {
              if (err instanceof CancelledError) throw new StatusError(1, "cancelled");
              const failure = failureFrom(err, redact);
              throw new StatusError(failure.grpcCode, redact(`${failure.category}: ${failure.message}`));
            }
          },
        }
      : {}),

    /** For onShutdown: releases the configured state (timers, keep-alives). */
    dispose: async () => {
      const previous = current;
      current = undefined;
      if (previous) await adapter.dispose?.(previous.state);
    },
  };
}

/** Serves the adapter as a model-provider plugin; resolves once the handshake is printed. */
export async function serveModelProvider<S>(adapter: ModelAdapter<S>) {
  const impl = createModelService(adapter);
  const { dispose, ...methods } = impl;
  const served = await serve({
    packageJson: adapter.packageJson,
    services: [service(ModelService, methods as never)],
    onShutdown: dispose,
  });
  // Node loads its fetch implementation (undici) on first use, which costs tens of ms;
  // loading it now, while the kernel is still configuring this plugin and assembling
  // context, keeps that cost off the first model request.
  setImmediate(() => void new Headers());
  return served;
}
