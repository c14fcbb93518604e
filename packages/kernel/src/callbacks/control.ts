// KernelCallbackService.ControlSession: the session controls behind the operator's
// slash commands (/model, /plan, /compact, /permissions, /cost, /sessions, /rewind,
// /memory), served to a command provider's tool while it handles an operator's direct
// call for that session.
// Anything else (a model's call of the same tool, a call for another session, a plugin
// serving no call) is refused with PERMISSION_DENIED, so a model can never switch its
// own model, leave plan mode or drop a rule by asking a tool to.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import {
  type PolicyEngine,
  type PolicyRule,
  PolicyStoreError,
  removeAlwaysRule,
} from "@pluggableharness/config";
import { StatusError } from "@pluggableharness/goplugin";
import type {
  ControlSessionRequest,
  ControlSessionResponseSchema,
  ModelChoiceSchema,
  PermissionRuleSchema,
} from "@pluggableharness/protocol/kernel";
import type { SessionInfo } from "@pluggableharness/protocol/session";
import type { CallbackPeer } from "@pluggableharness/runtime";
import type { Session } from "../loop/session/session.ts";
import { chooseModel, overrideCandidate, setPlanMode } from "../loop/session/session-settings.ts";
import type { ModelCandidate } from "../loop/turn/model-call.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import type { InvocationTracker } from "./invocations.ts";
import { memoryAudit } from "./memory-audit.ts";
import { applyRewindOf, listRewindAnchors, planRewindOf } from "./rewind.ts";

// gRPC status codes, by grpc-js's own names.
const { INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, UNAVAILABLE } = status;

export interface ControlDeps {
  readonly session: (id: string) => Session | undefined;
  readonly tracker: InvocationTracker;
  readonly providers: () => ProviderRegistry | undefined;
  /** The kernel's own engine: new sessions copy its ALWAYS rules. */
  readonly rootPolicy: () => PolicyEngine | undefined;
  readonly projectDir: string;
  readonly listSessions: (workingDirectory: string | undefined) => SessionInfo[];
  /** How the fork a rewind writes is synced (the kernel's session durability). */
  readonly durability?: "full" | "normal";
}

type Response = MessageInitShape<typeof ControlSessionResponseSchema>;
/** Session.compact as the compaction machinery defines it (loop/turn/compaction.ts). */
type CompactNow = (instructions: string, options: { mayReopen: boolean }) => { message: string } | undefined;
type Choice = MessageInitShape<typeof ModelChoiceSchema>;

function choiceOf(providers: ProviderRegistry | undefined, c: ModelCandidate | undefined): Choice {
  if (!c) return {};
  const spec = providers?.get(c.provider)?.models?.models.get(c.modelId);
  return {
    provider: c.provider,
    modelId: c.modelId,
    contextWindow: spec?.contextWindow ?? 0n,
    supportsVision: spec?.supportsVision ?? false,
  };
}

function ruleOf(r: PolicyRule): MessageInitShape<typeof PermissionRuleSchema> {
  return {
    name: r.name,
    scope: r.origin === "session" ? "session" : "always",
    provider: r.match.provider ?? "",
    toolName: r.match.tool_name ?? "",
    action: r.action,
    ...(r.match.command ? { command: r.match.command.join(" | ") } : {}),
    ...(r.match.path ? { path: r.match.path.join(" | ") } : {}),
  };
}

function rulesOf(session: Session): MessageInitShape<typeof PermissionRuleSchema>[] {
  return [...session.policy.sessionRules(), ...session.policy.alwaysRules()].map(ruleOf);
}

/** One ControlSession call from `peer`. */
export async function controlSession(
  deps: ControlDeps,
  peer: CallbackPeer,
  req: ControlSessionRequest,
): Promise<Response> {
  if (!req.sessionId) throw new StatusError(INVALID_ARGUMENT, "ControlSessionRequest.session_id is required");
  const session = deps.session(req.sessionId);
  if (!session || !deps.tracker.servesOperator(peer.plugin, req.sessionId)) {
    throw new StatusError(
      PERMISSION_DENIED,
      `plugin "${peer.plugin}" is not serving an operator's command for session ${req.sessionId}; session controls answer only the operator's own slash commands, never a model's tool call`,
    );
  }
  const providers = deps.providers();
  const op = req.operation;
  switch (op.case) {
    case "listModels": {
      const models: Choice[] = [];
      for (const p of providers?.modelProviders() ?? []) {
        for (const id of p.models?.models.keys() ?? [])
          models.push(choiceOf(providers, { provider: p.name, modelId: id }));
      }
      return {
        result: {
          case: "models",
          value: {
            models,
            current: choiceOf(providers, session.candidates()[0]),
            overridden: !!session.settings.modelOverride,
          },
        },
      };
    }
    case "setModel": {
      const { provider, modelId } = op.value;
      if (provider === "" && modelId === "") {
        chooseModel(session, undefined, "/model");
      } else {
        const p = providers?.get(provider);
        if (!p?.models) {
          throw new StatusError(NOT_FOUND, `no model provider "${provider}" is loaded`);
        }
        if (!p.models.models.has(modelId)) {
          const known = [...p.models.models.keys()].join(", ");
          throw new StatusError(
            NOT_FOUND,
            `${provider} serves no model "${modelId}" (it serves ${known || "none"})`,
          );
        }
        // A model of the profile's own chain keeps its configured parameters. Recorded in
        // the session file, so a resume uses it again (loop/session/session-settings.ts).
        chooseModel(session, overrideCandidate(session, provider, modelId), "/model");
        session.unavailableModels.delete(`${provider}/${modelId}`);
      }
      return {
        result: {
          case: "models",
          value: {
            current: choiceOf(providers, session.candidates()[0]),
            overridden: !!session.settings.modelOverride,
          },
        },
      };
    }
    case "setPlanMode": {
      if (op.value.on !== undefined) setPlanMode(session, op.value.on, "/plan");
      return { result: { case: "planMode", value: { on: session.settings.planMode } } };
    }
    case "compact": {
      // The kernel's "compact now" (issue 19): queued like a message, it runs right after
      // this command. Until a build has it, the session has no compact() and says so.
      const compact = (session as unknown as { compact?: CompactNow }).compact;
      if (typeof compact !== "function") {
        throw new StatusError(
          UNAVAILABLE,
          "this kernel build cannot compact a conversation on request yet (no compact-now operation)",
        );
      }
      const refused = compact.call(session, op.value.instructions, { mayReopen: true });
      if (refused) throw new StatusError(FAILED_PRECONDITION, refused.message);
      return { result: { case: "compacted", value: { queued: true } } };
    }
    case "listPermissionRules":
      return { result: { case: "permissionRules", value: { rules: rulesOf(session) } } };
    case "revokePermissionRule": {
      const name = op.value.name;
      const rule = session.policy.forget(name);
      if (!rule)
        throw new StatusError(NOT_FOUND, `no remembered rule named "${name}" applies to this session`);
      if (rule.origin !== "session") {
        deps.rootPolicy()?.forget(name);
        try {
          removeAlwaysRule(deps.projectDir, name);
        } catch (err) {
          // The running engines no longer apply it; the file still does for the next run.
          session.policy.addAlwaysRule(rule);
          deps.rootPolicy()?.addAlwaysRule(rule);
          throw new StatusError(
            FAILED_PRECONDITION,
            err instanceof PolicyStoreError
              ? err.message
              : `cannot update the policy store: ${(err as Error).message}`,
          );
        }
      }
      return {
        result: { case: "permissionRules", value: { rules: rulesOf(session), revoked: ruleOf(rule) } },
      };
    }
    case "usage": {
      const current = session.candidates()[0];
      const spec = current
        ? providers?.get(current.provider)?.models?.models.get(current.modelId)
        : undefined;
      const remaining = session.cost.remainingUsd();
      return {
        result: {
          case: "usage",
          value: {
            sessionCostUsd: session.writer.costUsd(),
            models: [...session.usageByModel.values()].map((u) => ({
              provider: u.provider,
              modelId: u.modelId,
              inputTokens: BigInt(u.input),
              outputTokens: BigInt(u.output),
              cacheReadTokens: BigInt(u.cacheRead),
              cacheWriteTokens: BigInt(u.cacheWrite),
              costUsd: u.costUsd,
            })),
            ...(Number.isFinite(remaining) ? { remainingCostBudgetUsd: remaining } : {}),
            contextTokens: BigInt(session.compaction.assembledTokensLastTurn),
            contextWindow: spec?.contextWindow ?? 0n,
          },
        },
      };
    }
    case "listSessions": {
      const wd = op.value.workingDirectory || undefined;
      return { result: { case: "sessions", value: { sessions: deps.listSessions(wd) } } };
    }
    case "listRewindAnchors":
      return { result: { case: "rewindAnchors", value: listRewindAnchors(session) } };
    case "planRewind":
      return { result: { case: "rewindPlan", value: planRewindOf(session, op.value.to) } };
    case "applyRewind":
      return { result: { case: "rewound", value: applyRewindOf(session, op.value, deps.durability) } };
    case "memory":
      return { result: { case: "memory", value: await memoryAudit(session, providers, op.value) } };
    default:
      throw new StatusError(INVALID_ARGUMENT, "ControlSessionRequest names no operation");
  }
}
