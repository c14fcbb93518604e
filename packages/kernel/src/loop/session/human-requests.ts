// What waits for a human in a session: plan items whose policy said ask (permission
// requests) and interactive calls' questions. Interactive frontends get them and answer
// with decide() / respond(); with none attached an ask resolves by the headless rule and
// a question goes unanswered, and when the last one detaches nothing keeps waiting —
// unless the rule is "wait" (a served session): then requests stay pending for the next
// frontend to attach. Every settled request is announced to all subscribers
// (request_resolved), so frontends that did not answer withdraw it. A remembered answer
// (SESSION, ALWAYS) covers exactly what was asked.
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  narrowestScope,
  type PolicyEngine,
  PolicyStoreError,
  recordAlwaysDecision,
} from "@pluggableharness/config";
import {
  ClientDecision,
  type ClientEvent_InteractiveResponse,
  type ClientEvent_PlanDecision,
  FrontendErrorCategory,
  ServerEvent_RequestOriginSchema,
} from "@pluggableharness/protocol/frontend";
import { PlanDecisionScope, type PlanItem } from "@pluggableharness/protocol/plan";
import { checkArguments } from "../../domain/index.ts";
import type { ServerEventInit, SessionChannel } from "../../frontends/channel.ts";
import type { FrontendErrorInit } from "../../frontends/hub.ts";
import type { LoopDeps } from "../deps.ts";
import { headlessDenyReason } from "../gate/refusal-hints.ts";
import type { AskResolution, InteractiveResolution } from "../ports.ts";
import type { SessionTool } from "../tool-registry.ts";

export type { AskResolution, InteractiveResolution } from "../ports.ts";

/** The session a request is for (the root's own, or a sub-agent's asking through its root). */
export interface AskingSession {
  readonly id: string;
  readonly parentId: string | undefined;
  readonly depth: number;
  readonly profile: { readonly name: string };
  readonly workingDirectory: string;
  /** Where a SESSION or ALWAYS answer is remembered for it. */
  readonly policy: Pick<PolicyEngine, "rememberForSession" | "addAlwaysRule">;
  readonly deps: Pick<LoopDeps, "secretValues" | "secretMask">;
}

/** What the human requests of a session read of it: itself, its root, and its frontends. */
export interface HumanRequestsDeps extends AskingSession {
  /** The root of its tree (itself for a root session): a sub-agent asks through it. */
  readonly root: HumanRequestsDeps;
  readonly humans: HumanRequests;
  readonly channel: Pick<SessionChannel, "publish" | "hasInteractiveSubscriber">;
  readonly deps: Pick<LoopDeps, "secretValues" | "secretMask" | "projectDir" | "policy" | "headlessAsk">;
}

interface PendingAsk {
  /** The session whose call it is: the root itself, or one of its sub-agents. */
  readonly origin: AskingSession;
  readonly item: PlanItem;
  readonly tool: SessionTool;
  readonly resolve: (r: AskResolution) => void;
}

interface PendingInteractive {
  readonly origin: AskingSession;
  readonly request: ServerEventInit;
  readonly tool: SessionTool;
  readonly resolve: (r: InteractiveResolution) => void;
}

export class HumanRequests {
  readonly #s: HumanRequestsDeps;
  readonly #asks = new Map<string, PendingAsk>();
  readonly #interactives = new Map<string, PendingInteractive>();
  readonly #settled = new Set<string>();

  constructor(session: HumanRequestsDeps) {
    this.#s = session;
  }

  decide(d: ClientEvent_PlanDecision): FrontendErrorInit | undefined {
    const invalid = (message: string): FrontendErrorInit => ({
      category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
      message,
    });
    const pending = this.#asks.get(d.planItemId);
    if (!pending) {
      return this.#settled.has(d.planItemId)
        ? invalid(`plan item ${d.planItemId} was already decided`)
        : invalid(`no plan item ${d.planItemId} is waiting for a decision`);
    }
    if (d.decision !== ClientDecision.ALLOW && d.decision !== ClientDecision.DENY) {
      return invalid("plan_decision.decision must be ALLOW or DENY");
    }
    const allow = d.decision === ClientDecision.ALLOW;
    if (d.correctedInput !== undefined) {
      if (!allow) return invalid("corrected_input comes only with an ALLOW decision");
      const check = checkArguments(pending.tool.tool.inputJsonSchema, d.correctedInput);
      if (!check.ok) {
        return invalid(
          `corrected_input does not match ${pending.tool.provider.name}.${pending.tool.tool.schema.name}'s input schema: ${check.errors.join("; ")}`,
        );
      }
    }
    const provider = pending.item.provider;
    const toolName = pending.item.toolName;
    // A remembered answer belongs to the session that asked (a sub-agent's own policy).
    const origin = pending.origin;
    let scope = "once";
    // A remembered answer covers exactly what was asked: the narrowest rule for the call.
    const remember =
      d.scope === PlanDecisionScope.ALWAYS || d.scope === PlanDecisionScope.SESSION
        ? narrowestScope(
            {
              kind: "resource",
              provider,
              tool_name: toolName,
              args: (pending.item.input ?? {}) as JsonObject,
              cwd: origin.workingDirectory,
            },
            { secretValues: origin.deps.secretValues, secretMask: origin.deps.secretMask },
          )
        : undefined;
    if (remember && !remember.ok) {
      return {
        category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
        message: `this answer cannot be remembered: ${remember.reason}; the item is still waiting: answer it with scope ONCE`,
      };
    }
    if (d.scope === PlanDecisionScope.ALWAYS) {
      scope = "always";
      try {
        const rules = recordAlwaysDecision(this.#s.deps.projectDir, {
          provider,
          tool_name: toolName,
          decision: allow ? "allow" : "deny",
          profile: origin.profile.name,
          scopes: remember!.ok ? remember!.scopes : [{}],
        });
        for (const rule of rules) {
          this.#s.deps.policy.addAlwaysRule(rule);
          origin.policy.addAlwaysRule(rule);
        }
      } catch (err) {
        if (!(err instanceof PolicyStoreError)) throw err;
        return {
          category: FrontendErrorCategory.POLICY_STORE_UNAVAILABLE,
          message: `the ALWAYS decision was not recorded (${err.message}); the item is still waiting: answer it with scope ONCE or SESSION`,
        };
      }
    } else if (d.scope === PlanDecisionScope.SESSION) {
      scope = "session";
      for (const sc of remember!.ok ? remember!.scopes : [{}]) {
        origin.policy.rememberForSession(provider, toolName, allow ? "allow" : "deny", sc);
      }
    }
    this.#settle(d.planItemId);
    this.#announce({ planItemId: d.planItemId, decision: d.decision, resolvedBy: `human:${scope}` });
    pending.resolve({
      decision: allow ? "allow" : "deny",
      decidedBy: `human:${scope}`,
      ...(allow
        ? {}
        : {
            reason: d.reason?.trim()
              ? `denied by the operator, who said: ${d.reason.trim().slice(0, 2000)}`
              : "denied by the operator",
          }),
      ...(d.correctedInput !== undefined ? { correctedInput: d.correctedInput } : {}),
    });
    return undefined;
  }

  respond(r: ClientEvent_InteractiveResponse): FrontendErrorInit | undefined {
    const pending = this.#interactives.get(r.callId);
    if (!pending) {
      return {
        category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
        message: this.#settled.has(r.callId)
          ? `interactive call ${r.callId} was already answered`
          : `no interactive call ${r.callId} is waiting for an answer`,
      };
    }
    const payload = r.response ?? {};
    const check = checkArguments(pending.tool.tool.outputJsonSchema, payload);
    if (!check.ok) {
      return {
        category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
        message: `the answer does not match ${pending.tool.tool.schema.name}'s output schema: ${check.errors.join("; ")}`,
      };
    }
    this.#settle(r.callId);
    this.#announce({ callId: r.callId, resolvedBy: "human" });
    pending.resolve({ kind: "answered", payload });
    return undefined;
  }

  pendingRequests(): ServerEventInit[] {
    return [
      ...[...this.#asks.values()].map(
        (a): ServerEventInit => ({
          event: { case: "permissionRequest", value: { planItem: a.item, ...originOf(this.#s, a.origin) } },
        }),
      ),
      ...[...this.#interactives.values()].map((i) => i.request),
    ];
  }

  /**
   * Settles an `ask`: a permission request to interactive frontends, else the headless
   * rule. A sub-agent's ask goes to its root session's frontends, labelled with it.
   */
  ask(item: PlanItem, tool: SessionTool, signal: AbortSignal): Promise<AskResolution> {
    const root = this.#s.root;
    return root === this.#s
      ? this.#ask(this.#s, item, tool, signal)
      : root.humans.#ask(this.#s, item, tool, signal);
  }

  #ask(
    origin: AskingSession,
    item: PlanItem,
    tool: SessionTool,
    signal: AbortSignal,
  ): Promise<AskResolution> {
    if (signal.aborted) return Promise.resolve({ decision: "cancelled", decidedBy: "interrupt" });
    if (!this.#waits() && !this.#s.channel.hasInteractiveSubscriber())
      return Promise.resolve(this.#headlessAsk(item));
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#asks.delete(item.id);
        this.#settle(item.id);
        this.#announce({ planItemId: item.id, resolvedBy: "interrupt" });
        resolve({ decision: "cancelled", decidedBy: "interrupt" });
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#asks.set(item.id, {
        origin,
        item,
        tool,
        resolve: (r) => {
          signal.removeEventListener("abort", onAbort);
          this.#asks.delete(item.id);
          resolve(r);
        },
      });
      this.#s.channel.publish({
        event: { case: "permissionRequest", value: { planItem: item, ...originOf(this.#s, origin) } },
      });
    });
  }

  /** Puts an interactive call's question to the attached human (a sub-agent's: its root's). */
  question(
    callId: string,
    request: ServerEventInit,
    tool: SessionTool,
    signal: AbortSignal,
  ): Promise<InteractiveResolution> {
    const root = this.#s.root;
    if (root === this.#s) return this.#question(this.#s, callId, request, tool, signal);
    const labelled =
      request.event?.case === "interactiveRequest"
        ? {
            event: {
              case: "interactiveRequest" as const,
              value: { ...request.event.value, ...originOf(root, this.#s) },
            },
          }
        : request;
    return root.humans.#question(this.#s, callId, labelled, tool, signal);
  }

  #question(
    origin: AskingSession,
    callId: string,
    request: ServerEventInit,
    tool: SessionTool,
    signal: AbortSignal,
  ): Promise<InteractiveResolution> {
    if (signal.aborted) return Promise.resolve({ kind: "cancelled" });
    if (!this.#waits() && !this.#s.channel.hasInteractiveSubscriber()) {
      return Promise.resolve({
        kind: "unanswered",
        reason: "no human is attached to answer (headless session)",
      });
    }
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#interactives.delete(callId);
        this.#settle(callId);
        this.#announce({ callId, resolvedBy: "interrupt" });
        resolve({ kind: "cancelled" });
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#interactives.set(callId, {
        origin,
        request,
        tool,
        resolve: (r) => {
          signal.removeEventListener("abort", onAbort);
          this.#interactives.delete(callId);
          resolve(r);
        },
      });
      this.#s.channel.publish(request);
    });
  }

  #settle(id: string): void {
    this.#settled.add(id);
  }

  /** Tells every subscriber a request is no longer waiting (the ones that did not answer withdraw it). */
  #announce(r: {
    planItemId?: string;
    callId?: string;
    decision?: ClientDecision;
    resolvedBy: string;
  }): void {
    this.#s.channel.publish({ event: { case: "requestResolved", value: r } });
  }

  /** A served session's asks wait for a frontend to attach instead of resolving headless. */
  #waits(): boolean {
    return this.#s.deps.headlessAsk === "wait";
  }

  #headlessAsk(item: PlanItem): AskResolution {
    if (this.#s.deps.headlessAsk === "allow") return { decision: "allow", decidedBy: "headless:allow" };
    return { decision: "deny", decidedBy: "headless:deny", reason: headlessDenyReason(item.decidedBy) };
  }

  /** The last interactive frontend left: nobody can answer what is pending, so it never waits. */
  subscribersChanged(): void {
    if (this.#waits() || this.#s.channel.hasInteractiveSubscriber()) return;
    for (const [id, a] of [...this.#asks]) {
      this.#settle(id);
      const r = this.#headlessAsk(a.item);
      this.#announce({
        planItemId: id,
        decision: r.decision === "allow" ? ClientDecision.ALLOW : ClientDecision.DENY,
        resolvedBy: r.decidedBy,
      });
      a.resolve(r);
    }
    for (const [id, q] of [...this.#interactives]) {
      this.#settle(id);
      this.#announce({ callId: id, resolvedBy: "detached" });
      q.resolve({ kind: "unanswered", reason: "the interactive frontend detached before answering" });
    }
  }
}

/** The label of a request a sub-agent makes through its root (none for the root's own). */
function originOf(root: AskingSession, origin: AskingSession) {
  if (origin === root) return {};
  return {
    origin: create(ServerEvent_RequestOriginSchema, {
      sessionId: origin.id,
      profile: origin.profile.name,
      depth: origin.depth,
      parentSessionId: origin.parentId ?? "",
    }),
  };
}
