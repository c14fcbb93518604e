// Widget providers on a session: the kernel opens each loaded widget's Attach stream
// for the session and forwards every WidgetUpdate to the session's subscribers as a
// render in the region it names. The latest content per widget and region is kept, so
// a frontend attaching later (the terminal UI attaches after the session started) sees
// the widget at once rather than after its next update. A widget whose stream fails is
// logged and left off; it never takes the session down. What a widget is sent of the
// hooks it observes is narrowed to what it declared it draws (widgetFeedView).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type AgentConfig,
  type HookPointName,
  type HookSubscription,
  hookPointName,
} from "@pluggableharness/config";
import type { ServerEventSchema } from "@pluggableharness/protocol/frontend";
import { type HookPayload, HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { Region } from "@pluggableharness/protocol/render";
import type { ProviderRegistry } from "../../plugins/providers.ts";
import type { LoopDeps } from "../deps.ts";

type ServerEventInit = MessageInitShape<typeof ServerEventSchema>;

export interface WidgetHost {
  readonly id: string;
  readonly channel: { publish(event: ServerEventInit): void };
  /** provider + region -> the render last sent (replayed to a frontend that attaches). */
  readonly widgetContent: Map<string, ServerEventInit>;
  readonly widgetAbort: AbortController;
}

/** Starts every widget's stream for `session`; resolves once they all ended. */
export function attachWidgets(deps: Pick<LoopDeps, "providers" | "log">, session: WidgetHost): Promise<void> {
  const widgets = deps.providers.all().filter((p) => p.categories.has("widget"));
  return Promise.all(
    widgets.map(async (p) => {
      const signal = session.widgetAbort.signal;
      try {
        await deps.providers.activate(p.name);
        for await (const u of p.ports.widget.attach({ sessionId: session.id }, { signal })) {
          const region = u.region === Region.UNSPECIFIED ? Region.SIDEBAR : u.region;
          const event: ServerEventInit = {
            event: {
              case: "render",
              value: {
                content: {
                  region,
                  replace: u.replace,
                  ...(u.content ? { content: u.content } : {}),
                  ...(u.priority !== undefined ? { priority: u.priority } : {}),
                },
              },
            },
          };
          session.widgetContent.set(`${p.name}\u0000${region}`, event);
          session.channel.publish(event);
        }
      } catch (err) {
        if (signal.aborted) return;
        deps.log.warn(`widget "${p.name}" stopped: ${(err as Error).message}`, undefined, session.id);
      }
    }),
  ).then(() => {});
}

/**
 * A widget is implicitly subscribed, in observe mode, to every hook point it says it
 * can serve (the widget protocol: it derives what it shows from observe-mode hooks);
 * an explicit hook{} block for the same point and provider takes its place. Ordered by
 * the provider's position in agent.hcl, like any implicit subscription.
 */
export function implicitWidgetSubscriptions(
  config: Pick<AgentConfig, "hooks" | "requiredProviders">,
  providers: ProviderRegistry,
): HookSubscription[] {
  return implicitObserveSubscriptions(config, providers, (p) =>
    p.categories.has("widget") && p.categories.has("hook") ? p.hookPoints.map(hookPointName) : [],
  );
}

type LoadedProvider = ReturnType<ProviderRegistry["all"]>[number];

/**
 * The hook dispatcher's observe view for widgets: a widget that declared a feed
 * (WidgetCapabilities.feed) gets post-tool-call only for the tools it names, and, when it
 * asked for usage only, post-model-response without the response message and run prompt.
 * A status line is drawn from a few numbers; a 1 MB tool result or a long answer would
 * cross to its worker for nothing. A widget without a feed gets whole payloads.
 */
export function widgetFeedView(
  providers: Pick<ProviderRegistry, "get">,
): (sub: HookSubscription, payload: HookPayload) => HookPayload | undefined {
  return (sub, payload) => {
    const feed = providers.get(sub.provider)?.widgetFeed;
    if (!feed) return payload;
    const p = payload.point;
    if (p.case === "postToolCall")
      return feed.tools.includes(p.value.call?.toolName ?? "") ? payload : undefined;
    if (p.case === "postModelResponse" && feed.usageOnly) {
      const { model, usage, costUsd, contextWindow } = p.value;
      return create(HookPayloadSchema, {
        point: {
          case: "postModelResponse",
          value: { ...(model ? { model } : {}), ...(usage ? { usage } : {}), costUsd, contextWindow },
        },
      });
    }
    return payload;
  };
}

/**
 * Observe-mode subscriptions of each provider declared in agent.hcl to the points
 * `pointsOf` names for it, except where an explicit hook{} block for the same point and
 * provider takes the place; ordered by the provider's position in agent.hcl.
 */
function implicitObserveSubscriptions(
  config: Pick<AgentConfig, "hooks" | "requiredProviders">,
  providers: ProviderRegistry,
  pointsOf: (p: LoadedProvider) => Iterable<HookPointName | undefined>,
): HookSubscription[] {
  const out: HookSubscription[] = [];
  for (const p of providers.all()) {
    const declared = config.requiredProviders.find((r) => r.localName === p.name);
    if (!declared) continue;
    for (const point of pointsOf(p)) {
      if (!point) continue;
      if (config.hooks.some((h) => h.provider === p.name && h.point === point)) continue;
      out.push({
        point,
        provider: p.name,
        mode: "observe",
        range: declared.range,
        providerRange: declared.range,
        order: p.order,
      });
    }
  }
  return out;
}

/** The points a memory provider is implicitly subscribed to (memory protocol, write triggers). */
export const MEMORY_HOOK_POINTS = ["post-model-response", "session-end"] as const;

/**
 * A memory provider that serves HookSubscriberService is implicitly subscribed, in
 * observe mode, to post-model-response (every turn) and session-end (once per run) when
 * its MemoryCapabilities.supported_hook_points list them: its autonomous write path. An
 * explicit hook{} block for the same point and provider takes its place. Observe mode:
 * it can never change or stop a turn, and a failure or timeout is a hook_error only.
 */
export function implicitMemorySubscriptions(
  config: Pick<AgentConfig, "hooks" | "requiredProviders">,
  providers: ProviderRegistry,
): HookSubscription[] {
  return implicitObserveSubscriptions(config, providers, (p) => {
    if (!p.categories.has("memory") || !p.categories.has("hook") || !p.memory) return [];
    const advertised = new Set(p.memory.supportedHookPoints.map(hookPointName));
    return MEMORY_HOOK_POINTS.filter((point) => advertised.has(point));
  });
}
