// The go-plugin transport behind the provider ports: each port wraps the typed client
// the runtime hands out for the plugin (PluginHost.client, which launches or relaunches
// the plugin before a call), unchanged on the wire. The only translation is of failures:
// a gRPC status becomes a ProviderCallError with the same code, a crashed or unlaunchable
// plugin a ProviderUnavailableError. This file and plugins/ are the kernel's only users
// of the generated service descriptors and the go-plugin client types.
import type { DescService } from "@bufbuild/protobuf";
import { RpcError, type ServiceClient } from "@pluggableharness/goplugin";
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { MemoryService } from "@pluggableharness/protocol/memory";
import { ModelService } from "@pluggableharness/protocol/model";
import { ToolService } from "@pluggableharness/protocol/tool";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { PluginCrashedError, PluginLaunchError } from "@pluggableharness/runtime";
import { ProviderCallError, type ProviderPorts, ProviderUnavailableError } from "./ports.ts";

/** Hands out a typed client per service (PluginHost.client, LaunchContext.client). */
export type ClientFactory = <S extends DescService>(service: S) => ServiceClient<S>;

/** The transport-neutral form of a failure from a go-plugin call. */
export function providerError(provider: string, err: unknown): unknown {
  if (err instanceof RpcError) return new ProviderCallError(err.code, err.details, err.method, err.message);
  if (err instanceof PluginCrashedError)
    return new ProviderUnavailableError(provider, "crashed", firstLine(err.message), err);
  if (err instanceof PluginLaunchError)
    return new ProviderUnavailableError(provider, "launch_failed", firstLine(err.message), err);
  return err;
}

function firstLine(message: string): string {
  return message.split("\n")[0]!;
}

/** The W3C trace context of the current span, for a call's metadata (empty: none). */
export type TraceCarrierSource = () => Readonly<Record<string, string>>;

/**
 * The call options with the current trace context (`traceparent`, `tracestate`) added to
 * their metadata, so the plugin's work joins the kernel's trace: gRPC metadata for a
 * process plugin, the same metadata slot of the port-rpc CALL frame for a worker.
 */
function traced(options: unknown, carrier: TraceCarrierSource | undefined): unknown {
  if (!carrier) return options;
  const ctx = carrier();
  if (!ctx["traceparent"]) return options;
  const o = (options ?? {}) as { metadata?: Record<string, string> };
  return { ...o, metadata: { ...ctx, ...o.metadata } };
}

/** One port over one service's client, created on first use. */
function port<S extends DescService>(
  provider: string,
  service: S,
  clients: ClientFactory,
  carrier: TraceCarrierSource | undefined,
): unknown {
  let client: ServiceClient<S> | undefined;
  const get = () => {
    client ??= clients(service);
    return client as unknown as Record<string, (req: unknown, options: unknown) => unknown>;
  };
  const out: Record<string, unknown> = {};
  for (const m of service.methods) {
    const name = m.localName;
    if (m.methodKind === "unary") {
      out[name] = async (request: unknown, options: unknown) => {
        try {
          return await get()[name]!(request, traced(options, carrier));
        } catch (err) {
          throw providerError(provider, err);
        }
      };
    } else if (m.methodKind === "server_streaming") {
      out[name] = async function* (request: unknown, options: unknown) {
        try {
          yield* get()[name]!(request, traced(options, carrier)) as AsyncIterable<unknown>;
        } catch (err) {
          throw providerError(provider, err);
        }
      };
    }
  }
  return out;
}

/**
 * Every category port of one plugin over go-plugin clients; with `carrier`, each call
 * carries the current trace context.
 */
export function grpcPorts(
  provider: string,
  clients: ClientFactory,
  carrier?: TraceCarrierSource,
): ProviderPorts {
  return {
    model: port(provider, ModelService, clients, carrier) as ProviderPorts["model"],
    tool: port(provider, ToolService, clients, carrier) as ProviderPorts["tool"],
    context: port(provider, ContextService, clients, carrier) as ProviderPorts["context"],
    memory: port(provider, MemoryService, clients, carrier) as ProviderPorts["memory"],
    hook: port(provider, HookSubscriberService, clients, carrier) as ProviderPorts["hook"],
    frontend: port(provider, FrontendService, clients, carrier) as ProviderPorts["frontend"],
    widget: port(provider, WidgetService, clients, carrier) as ProviderPorts["widget"],
  };
}
