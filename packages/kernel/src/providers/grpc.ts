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

/** One port over one service's client, created on first use. */
function port<S extends DescService>(provider: string, service: S, clients: ClientFactory): unknown {
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
          return await get()[name]!(request, options);
        } catch (err) {
          throw providerError(provider, err);
        }
      };
    } else if (m.methodKind === "server_streaming") {
      out[name] = async function* (request: unknown, options: unknown) {
        try {
          yield* get()[name]!(request, options) as AsyncIterable<unknown>;
        } catch (err) {
          throw providerError(provider, err);
        }
      };
    }
  }
  return out;
}

/** Every category port of one plugin over go-plugin clients. */
export function grpcPorts(provider: string, clients: ClientFactory): ProviderPorts {
  return {
    model: port(provider, ModelService, clients) as ProviderPorts["model"],
    tool: port(provider, ToolService, clients) as ProviderPorts["tool"],
    context: port(provider, ContextService, clients) as ProviderPorts["context"],
    memory: port(provider, MemoryService, clients) as ProviderPorts["memory"],
    hook: port(provider, HookSubscriberService, clients) as ProviderPorts["hook"],
    frontend: port(provider, FrontendService, clients) as ProviderPorts["frontend"],
    widget: port(provider, WidgetService, clients) as ProviderPorts["widget"],
  };
}
