// Widget-provider checks (frontend/widget-protocol.md, frontend/conformance.md): identity,
// declared regions, configuration, then a session-scoped, server-streaming Attach whose
// updates stay in the declared regions and carry content, state that follows observe-mode
// hook dispatches (no separate data feed), a classified refusal of an Attach without a
// session, clean cancellation, health.
import { HookPoint, PluginCategory } from "@pluggableharness/protocol/common";
import { HookMode, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { Region } from "@pluggableharness/protocol/render";
import {
  type WidgetCapabilities,
  WidgetCapabilitiesSchema,
  WidgetService,
  type WidgetUpdate,
} from "@pluggableharness/protocol/widget";
import { badEnumValues, Code, checkHealth, checkOpening, codeName, codeOf } from "../common/checks.ts";
import { ulid } from "../common/ids.ts";
import { payloadFor } from "../hook/index.ts";
import type { CategoryChecks, CheckContext } from "../runner.ts";

const P = "widget";
/** How long the checks watch a stream for updates. */
const SETTLE_MS = 1_000;
const HOOK_UPDATE_MS = 3_000;

export const widgetChecks: CategoryChecks = async (ctx) => {
  const client = ctx.host.client(WidgetService);
  const { caps, configured } = await checkOpening(ctx, P, {
    category: PluginCategory.WIDGET,
    client,
    capabilitiesSchema: WidgetCapabilitiesSchema,
    declarations: (c) => checkDeclarations(ctx, c),
  });
  if (!configured || !caps) {
    ctx.record(`${P}.attach`, "skip", "not attached: the configuration was refused");
    checkHealth(ctx, P);
    return;
  }
  await checkAttach(ctx, caps);
  await checkNoSession(ctx);
  checkHealth(ctx, P);
};

/** Attach is session-scoped: without a session it is refused with INVALID_ARGUMENT. */
async function checkNoSession(ctx: CheckContext): Promise<void> {
  let updates = 0;
  let code: number | undefined;
  try {
    for await (const _ of ctx.host
      .client(WidgetService)
      .attach({ sessionId: "" }, { signal: AbortSignal.timeout(HOOK_UPDATE_MS) })) {
      updates++;
      break;
    }
  } catch (err) {
    code = codeOf(err);
  }
  ctx.record(
    `${P}.errors.no_session`,
    code === Code.INVALID_ARGUMENT ? "pass" : "fail",
    code === Code.INVALID_ARGUMENT
      ? "refused with INVALID_ARGUMENT"
      : updates > 0
        ? `streamed ${updates} updates for no session instead of refusing with INVALID_ARGUMENT`
        : code === Code.CANCELLED
          ? "neither refused nor streamed: it waited until cancelled; refuse with INVALID_ARGUMENT"
          : `ended with ${codeName(code)}, not INVALID_ARGUMENT`,
  );
}

function checkDeclarations(ctx: CheckContext, caps: WidgetCapabilities): void {
  const problems: string[] = [];
  if (caps.regions.length === 0) problems.push("no region declared");
  const regions = badEnumValues(caps.regions, Region);
  if (regions.length) problems.push(`unknown regions ${regions.join(", ")}`);
  const points = badEnumValues(caps.supportedHookPoints, HookPoint);
  if (points.length) problems.push(`unknown hook points ${points.join(", ")}`);
  ctx.record(
    `${P}.capabilities.declared`,
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : `regions ${caps.regions.map((r) => Region[r]).join(", ")}${caps.supportedHookPoints.length ? `; hooks ${caps.supportedHookPoints.map((p) => HookPoint[p]).join(", ")}` : ""}`,
  );
}

async function checkAttach(ctx: CheckContext, caps: WidgetCapabilities): Promise<void> {
  const sessionId = `conformance-widget-${ulid()}`;
  const controller = new AbortController();
  const updates: WidgetUpdate[] = [];
  let waiter: (() => void) | undefined;
  let ended: { code?: number } | undefined;
  const stream = (async () => {
    try {
      for await (const u of ctx.host
        .client(WidgetService)
        .attach({ sessionId }, { signal: controller.signal })) {
        updates.push(u);
        waiter?.();
      }
      ended = {};
    } catch (err) {
      ended = { code: codeOf(err) };
    }
    waiter?.();
  })();
  const waitFor = (ms: number, count: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      waiter = () => {
        if (updates.length >= count || ended) {
          clearTimeout(timer);
          resolve();
        }
      };
    });
  await waitFor(SETTLE_MS, Number.MAX_SAFE_INTEGER);
  const early = ended as { code?: number } | undefined;
  if (early) {
    ctx.record(
      `${P}.attach`,
      "fail",
      `Attach ended by itself (${codeName(early.code)}) instead of streaming until cancelled`,
    );
    return;
  }

  // Hook dispatches for this session are the widget's only input: one must move it.
  const served = ctx.description.categories.includes("hook");
  const before = updates.length;
  if (served && caps.supportedHookPoints.length > 0) {
    for (const point of caps.supportedHookPoints) {
      await ctx.host
        .client(HookSubscriberService)
        .dispatchHook({
          mode: HookMode.OBSERVE,
          payload: payloadFor(point, ctx.workingDirectory),
          callContext: { sessionId, turnId: ulid(), workingDirectory: ctx.workingDirectory },
        })
        .catch(() => undefined);
    }
    await waitFor(HOOK_UPDATE_MS, before + 1);
    ctx.record(
      `${P}.attach.hook_driven`,
      updates.length > before ? "pass" : "warn",
      updates.length > before
        ? `${updates.length - before} updates followed observe dispatches for the session`
        : "no update followed observe dispatches of its declared hook points",
    );
  } else
    ctx.record(
      `${P}.attach.hook_driven`,
      "skip",
      served ? "no supported_hook_points declared" : "no HookSubscriberService served",
    );

  const problems: string[] = [];
  updates.forEach((u, i) => {
    if (!caps.regions.includes(u.region))
      problems.push(`update ${i} targets ${Region[u.region] ?? u.region}, which is not declared`);
    if (!u.content?.root?.node.case) problems.push(`update ${i} has no content`);
  });
  ctx.record(
    `${P}.attach`,
    problems.length ? "fail" : updates.length ? "pass" : "warn",
    problems.length
      ? problems.join("; ")
      : updates.length
        ? `${updates.length} updates, all in declared regions`
        : "streamed nothing; a widget usually shows its state on attach",
  );

  controller.abort();
  await stream;
  const end = ended as { code?: number } | undefined;
  let alive = true;
  try {
    await ctx.host.client(WidgetService).getCapabilities({});
  } catch {
    alive = false;
  }
  const clean = (end?.code === undefined || end.code === Code.CANCELLED) && alive;
  ctx.record(
    `${P}.attach.cancel`,
    clean ? "pass" : "fail",
    clean
      ? "cancelling Attach ended the stream; the plugin kept serving"
      : `cancelling Attach ended with ${codeName(end?.code)}${alive ? "" : " and the plugin stopped answering"}`,
  );
}
