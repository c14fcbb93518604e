// Hook dispatch through HookSubscriberService for the eight points (context-assemble
// runs on ContextService.Contribute instead). Subscribers of a point are visited once,
// in agent.hcl declaration order, each under its own deadline:
// - observe: the answer is discarded; a failure is recorded and the chain goes on;
// - transform: the answer replaces the payload, but only in the fields the point lets a
//   subscriber change (pre-model-call: messages); a failure stops the chain and is
//   reported to the caller, which must not carry on as if nothing happened;
// - veto: ALLOW goes on, DENY stops the chain, and a failure, a timeout or an
//   unspecified decision is a DENY (fail closed).
// Every failure is persisted as a hook_error event attributed to the subscriber.
import { clone, create, equals } from "@bufbuild/protobuf";
import type { HookPointName, HookSubscription } from "@pluggableharness/config";
import { HOOK_MODES, HOOK_POINTS } from "@pluggableharness/config";
import { PluginCategory, type ProducerRef, ProducerRefSchema } from "@pluggableharness/protocol/common";
import {
  HookDecision,
  type HookError,
  HookErrorCategory,
  HookErrorSchema,
  type HookMode,
  type HookPayload,
  HookPayloadSchema,
} from "@pluggableharness/protocol/hook";
import type { InvocationTracker } from "../callbacks/invocations.ts";
import type { KernelLogger } from "../log.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { errorType } from "../telemetry/error-type.ts";
import { noTelemetry, type Telemetry } from "../telemetry/telemetry.ts";
import type { Tracer } from "../trace.ts";

export interface HookContext {
  readonly sessionId: string;
  /** Empty outside a turn (session-start, session-end). */
  readonly turnId: string;
  readonly workingDirectory: string;
  readonly signal?: AbortSignal;
}

export interface HookOutcome {
  /** The payload after every transform that succeeded. */
  readonly payload: HookPayload;
  readonly decision: "allow" | "deny";
  /** The subscriber that denied (explicitly or by failing). */
  readonly deniedBy?: string;
  readonly reason?: string;
  /** A transform subscriber failed: the chain stopped there. */
  readonly transformFailure?: HookError;
}

export interface HookDispatcherOptions {
  readonly subscriptions: readonly HookSubscription[];
  readonly providers: ProviderRegistry;
  readonly defaultTimeoutMs: number;
  readonly tracker: InvocationTracker;
  readonly log: KernelLogger;
  readonly trace: Tracer;
  /** One span per dispatch, a child per subscriber invocation (hook-dispatch.md). */
  readonly telemetry?: Telemetry;
  /** Persists (and publishes) a hook_error for the session. */
  readonly onHookError: (sessionId: string, error: HookError) => void;
  /**
   * What an observe-mode subscriber is sent: the payload, a narrower copy, or undefined
   * (nothing: it is skipped). Transform and veto subscribers always get the whole payload.
   */
  readonly observeView?: (sub: HookSubscription, payload: HookPayload) => HookPayload | undefined;
}

/** The variant of HookPayload each point carries. */
const VARIANT: Record<HookPointName, NonNullable<HookPayload["point"]["case"]>> = {
  "session-start": "sessionStart",
  "pre-model-call": "preModelCall",
  "post-model-response": "postModelResponse",
  "pre-tool-call": "preToolCall",
  "plan-ready": "planReady",
  "post-tool-call": "postToolCall",
  "post-apply": "postApply",
  "session-end": "sessionEnd",
};

const DEADLINE_EXCEEDED = 4;

class SubscriberFailure extends Error {
  readonly category: HookErrorCategory;
  readonly timedOut: boolean;
  constructor(category: HookErrorCategory, message: string, timedOut = false, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.category = category;
    this.timedOut = timedOut;
  }
}

export class HookDispatcher {
  readonly #opts: HookDispatcherOptions;
  readonly #byPoint = new Map<HookPointName, HookSubscription[]>();

  constructor(options: HookDispatcherOptions) {
    this.#opts = options;
    for (const s of [...options.subscriptions].sort((a, b) => a.order - b.order)) {
      const list = this.#byPoint.get(s.point) ?? [];
      list.push(s);
      this.#byPoint.set(s.point, list);
    }
  }

  subscribers(point: HookPointName): readonly HookSubscription[] {
    return this.#byPoint.get(point) ?? [];
  }

  dispatch(point: HookPointName, payload: HookPayload, ctx: HookContext): Promise<HookOutcome> {
    const telemetry = this.#opts.telemetry ?? noTelemetry;
    return telemetry.span(
      `hook ${point}`,
      { "hook.point": point, "hook.subscribers": this.subscribers(point).length },
      async (span) => {
        const out = await this.#dispatch(point, payload, ctx, telemetry);
        span.set({ "hook.decision": out.decision, "hook.denied_by": out.deniedBy });
        return out;
      },
    );
  }

  async #dispatch(
    point: HookPointName,
    payload: HookPayload,
    ctx: HookContext,
    telemetry: Telemetry,
  ): Promise<HookOutcome> {
    if (payload.point.case !== VARIANT[point]) {
      throw new Error(`hook payload for ${point} carries ${payload.point.case ?? "nothing"}`);
    }
    const subs = this.subscribers(point);
    this.#opts.trace({
      name: "hook.dispatch",
      sessionId: ctx.sessionId,
      ...(ctx.turnId ? { turnId: ctx.turnId } : {}),
      attrs: { point, subscribers: subs.length },
    });
    let current = payload;
    for (const sub of subs) {
      const mode = HOOK_MODES[sub.mode];
      const sent =
        sub.mode === "observe" && this.#opts.observeView ? this.#opts.observeView(sub, current) : current;
      if (!sent) continue;
      this.#opts.trace({
        name: "hook.subscriber",
        sessionId: ctx.sessionId,
        ...(ctx.turnId ? { turnId: ctx.turnId } : {}),
        attrs: { point, subscriber: sub.provider, mode: sub.mode },
      });
      try {
        const next = await telemetry.span(
          `hook.subscriber ${sub.provider}`,
          { "hook.point": point, "hook.subscriber": sub.provider, "hook.mode": sub.mode },
          async (span) => {
            try {
              const r = await this.#invoke(sub, mode, sent, ctx);
              if (sub.mode === "veto")
                span.set({ "hook.decision": r.decision === HookDecision.DENY ? "deny" : "allow" });
              return r;
            } catch (err) {
              const category = err instanceof SubscriberFailure ? HookErrorCategory[err.category] : "failed";
              span.fail(String(category).toLowerCase(), (err as Error).message);
              // What the plugin call itself did (process_crashed, timeout, ...), under the hook's category.
              const cause = (err as Error).cause;
              if (cause !== undefined) span.set({ "hook.error.cause": errorType(cause) });
              throw err;
            }
          },
        );
        if (sub.mode === "transform" && next.payload) current = next.payload;
        if (sub.mode === "veto" && next.decision === HookDecision.DENY) {
          return {
            payload: current,
            decision: "deny",
            deniedBy: sub.provider,
            reason: next.reason || `denied by hook subscriber "${sub.provider}" at ${point}`,
          };
        }
      } catch (err) {
        if (ctx.signal?.aborted) {
          // Cancellation is the caller's control flow, not the subscriber's fault.
          return sub.mode === "veto"
            ? { payload: current, decision: "deny", deniedBy: sub.provider, reason: "the turn was cancelled" }
            : { payload: current, decision: "allow" };
        }
        const failure =
          err instanceof SubscriberFailure
            ? err
            : new SubscriberFailure(
                sub.mode === "transform"
                  ? HookErrorCategory.TRANSFORM_FAILED
                  : sub.mode === "veto"
                    ? HookErrorCategory.VETO_FAILED
                    : HookErrorCategory.OBSERVE_FAILED,
                (err as Error).message,
              );
        const hookError = create(HookErrorSchema, {
          subscriber: this.#producer(sub.provider),
          point: HOOK_POINTS[point],
          mode,
          category: failure.category,
          message: failure.message,
          timedOut: failure.timedOut,
        });
        this.#opts.log.warn(
          `hook subscriber "${sub.provider}" failed at ${point}`,
          {
            mode: sub.mode,
            category: HookErrorCategory[failure.category],
            error: failure.message,
            timed_out: failure.timedOut,
          },
          ctx.sessionId,
        );
        try {
          this.#opts.onHookError(ctx.sessionId, hookError);
        } catch (persistErr) {
          this.#opts.log.error(
            "could not record a hook_error",
            { error: (persistErr as Error).message },
            ctx.sessionId,
          );
        }
        if (sub.mode === "observe") continue;
        if (sub.mode === "veto") {
          return {
            payload: current,
            decision: "deny",
            deniedBy: sub.provider,
            reason: `hook subscriber "${sub.provider}" failed at ${point} (${failure.timedOut ? "timed out" : failure.message}); failing closed`,
          };
        }
        return { payload: current, decision: "allow", transformFailure: hookError };
      }
    }
    return { payload: current, decision: "allow" };
  }

  async #invoke(
    sub: HookSubscription,
    mode: HookMode,
    payload: HookPayload,
    ctx: HookContext,
  ): Promise<{ payload?: HookPayload; decision?: HookDecision; reason?: string }> {
    const provider = this.#opts.providers.get(sub.provider);
    const failCategory =
      sub.mode === "transform"
        ? HookErrorCategory.TRANSFORM_FAILED
        : sub.mode === "veto"
          ? HookErrorCategory.VETO_FAILED
          : HookErrorCategory.OBSERVE_FAILED;
    if (!provider?.categories.has("hook")) {
      throw new SubscriberFailure(
        failCategory,
        `"${sub.provider}" is not loaded or serves no HookSubscriberService`,
      );
    }
    const timeoutMs = sub.timeout_ms ?? this.#opts.defaultTimeoutMs;
    let response: Awaited<ReturnType<typeof provider.ports.hook.dispatchHook>>;
    try {
      response = await this.#opts.tracker.run(provider.name, ctx.sessionId, "hook", () =>
        provider.ports.hook.dispatchHook(
          {
            mode,
            payload,
            callContext: {
              sessionId: ctx.sessionId,
              turnId: ctx.turnId,
              workingDirectory: ctx.workingDirectory,
            },
          },
          { timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) },
        ),
      );
    } catch (err) {
      const timedOut = (err as { code?: number }).code === DEADLINE_EXCEEDED;
      throw new SubscriberFailure(
        failCategory,
        timedOut ? `no answer within ${timeoutMs} ms` : (err as Error).message,
        timedOut,
        err,
      );
    }
    const out = response.outcome;
    const invalid = (why: string) => new SubscriberFailure(HookErrorCategory.INVALID_RESPONSE, why);
    switch (sub.mode) {
      case "observe":
        if (out.case !== "observe") throw invalid(`an observe subscriber answered ${out.case ?? "nothing"}`);
        return {};
      case "transform": {
        if (out.case !== "transform")
          throw invalid(`a transform subscriber answered ${out.case ?? "nothing"}`);
        const next = out.value.payload;
        if (!next || next.point.case !== payload.point.case) {
          throw invalid(
            `the transformed payload is ${next?.point.case ?? "empty"}, not ${payload.point.case}`,
          );
        }
        // Only pre-model-call's messages may change; everything else must come back as sent.
        const expected = clone(HookPayloadSchema, payload);
        if (expected.point.case === "preModelCall" && next.point.case === "preModelCall") {
          expected.point.value.messages = next.point.value.messages;
        }
        if (!equals(HookPayloadSchema, expected, next)) {
          throw invalid(
            payload.point.case === "preModelCall"
              ? "the transform changed a field other than messages"
              : `nothing at ${sub.point} may be transformed, but the payload changed`,
          );
        }
        return { payload: next };
      }
      case "veto": {
        if (out.case !== "veto") throw invalid(`a veto subscriber answered ${out.case ?? "nothing"}`);
        const d = out.value.decision;
        if (d !== HookDecision.ALLOW && d !== HookDecision.DENY)
          throw invalid("the veto decision is unspecified");
        return { decision: d, reason: out.value.reason };
      }
    }
  }

  /** The failing subscriber's identity for hook_error: its HookSubscriberService Describe answer. */
  #producer(name: string): ProducerRef {
    const p = this.#opts.providers.get(name);
    const hook = p?.producers["hook"];
    if (hook && hook.category !== PluginCategory.UNSPECIFIED && hook.version) return hook;
    // A hook-only plugin's Describe may not name a category: borrow one it serves.
    const other = p
      ? Object.values(p.producers).find((r) => r.category !== PluginCategory.UNSPECIFIED)
      : undefined;
    return create(ProducerRefSchema, {
      name: hook?.name || other?.name || name,
      version: hook?.version || other?.version || "0.0.0",
      source: hook?.source ?? other?.source ?? "",
      category: other?.category ?? PluginCategory.TOOL,
      protocolVersion: hook?.protocolVersion ?? 0,
    });
  }
}
