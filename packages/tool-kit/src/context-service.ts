// The ContextService glue the first-party context providers share: capabilities from
// their config fields, Configure through readConfig, and a Contribute that refuses a
// negative budget, hands the provider a kernel client bound to the request's session
// (so CountTokens is attributed to it) and hands on the chain it received, the provider's
// own sections from an earlier round replaced by this round's.
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import {
  type KernelClient,
  kernelForRequest,
  type ServedPlugin,
  StatusError,
  serve,
  service,
} from "@pluggableharness/plugin-sdk";
import type { ContextSectionSchema, Stability } from "@pluggableharness/protocol/content";
import { type ContextRequest, ContextService } from "@pluggableharness/protocol/context";
import { type ConfigField, configSchema, type Diagnostic, readConfig } from "./config.ts";

export interface ContextProvider {
  readonly packageJson: URL;
  /** The provider name its sections carry. */
  readonly name: string;
  readonly config: readonly ConfigField[];
  readonly defaultTokenBudget: number;
  readonly stability: Stability;
  /** Checks and keeps the decoded values; runs only when they decoded without a problem. */
  apply(values: JsonObject): Diagnostic[] | Promise<Diagnostic[]>;
  /** This provider's own sections for this request. */
  contribute(
    req: ContextRequest,
    kernel: KernelClient,
  ): Promise<MessageInitShape<typeof ContextSectionSchema>[]>;
}

/** Serves one non-compacting context provider until the kernel stops it. */
export function serveContextProvider(provider: ContextProvider): Promise<ServedPlugin> {
  return serve({
    packageJson: provider.packageJson,
    services: [
      service(ContextService, {
        getCapabilities: () => ({
          capabilities: {
            defaultTokenBudget: BigInt(provider.defaultTokenBudget),
            stability: provider.stability,
            compactor: false,
            configSchema: configSchema(provider.config),
          },
        }),
        async configure(req) {
          const { values, diagnostics } = readConfig(provider.config, req.config);
          if (diagnostics.length === 0) diagnostics.push(...(await provider.apply(values)));
          return { result: { diagnostics } };
        },
        async contribute(req, ctx) {
          if (req.tokenBudget < 0n) throw new StatusError(3, "token_budget is negative");
          const own = await provider.contribute(req, kernelForRequest(ctx.kernel, req));
          return { sections: [...req.priorSections.filter((s) => s.provider !== provider.name), ...own] };
        },
      }),
    ],
  });
}
