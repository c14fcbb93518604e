// RunSession, the kernel side (agent-loop/subagents.md). A plugin serving a call of a
// spawn-capable tool (ToolSchema.spawns) asks for a child session; the kernel checks the
// call is really in flight and names this profile, resolves the child's depth budget,
// tools and bounds from the profile (never from the parent's set), runs it to its end
// (fresh context unless the profile forks its parent's history) and returns its final
// message, status, roll-up totals and what it was refused. The parent's concurrent
// spawns are capped at max_concurrent_subagents; the rest queue. Everything that ends
// the parent's run or the spawning call cancels the child.
import { clone, create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { type AgentProfile, getProfile } from "@pluggableharness/config";
import { StatusError } from "@pluggableharness/goplugin";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import {
  type RunSessionRequest,
  type RunSessionResponse,
  RunSessionResponseSchema,
} from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { LoopDeps } from "../loop/deps.ts";
import type { InflightCall, Session, SubagentInit } from "../loop/session/session.ts";
import { ToolRegistry } from "../loop/tool-registry.ts";
import { childRemainingDepth, spawnedProfileName } from "./risk.ts";

// gRPC status codes, by grpc-js's own names.
const { CANCELLED, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION } = status;

/** Concurrent children per parent when its profile sets no max_concurrent_subagents. */
export const DEFAULT_MAX_CONCURRENT_SUBAGENTS = 4;

/** The synthetic reason of the parent's messages a forking profile's child starts from. */
export const FORKED_FROM_PARENT = "forked_from_parent";

export interface RunSessionHost {
  readonly deps: LoopDeps;
  session(id: string): Session | undefined;
  /** Creates the child's session file and its Session (registered with the kernel). */
  createChild(parent: Session, profile: AgentProfile, init: SubagentInit): Promise<Session>;
  /** A child that ended: its file is closed; from now on it is replayed from disk. */
  releaseChild(child: Session): Promise<void>;
}

/** A counting semaphore: the parent's slots for concurrently running children. */
class Slots {
  #free: number;
  readonly #queue: Array<() => void> = [];
  constructor(n: number) {
    this.#free = n;
  }
  async take(signal: AbortSignal): Promise<boolean> {
    if (this.#free > 0) {
      this.#free--;
      return true;
    }
    return new Promise((resolve) => {
      const grant = () => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      };
      const onAbort = () => {
        const i = this.#queue.indexOf(grant);
        if (i >= 0) this.#queue.splice(i, 1);
        resolve(false);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(grant);
    });
  }
  give(): void {
    const next = this.#queue.shift();
    if (next) next();
    else this.#free++;
  }
}

const slotsOf = new WeakMap<Session, Slots>();

function slots(parent: Session): Slots {
  let s = slotsOf.get(parent);
  if (!s) {
    s = new Slots(parent.profile.max_concurrent_subagents ?? DEFAULT_MAX_CONCURRENT_SUBAGENTS);
    slotsOf.set(parent, s);
  }
  return s;
}

/** The spawn call the plugin is serving: named by tool_call_id, or its only one in flight. */
function callerCall(parent: Session, plugin: string, toolCallId: string): InflightCall {
  if (toolCallId) {
    const call = parent.inflight.get(toolCallId);
    if (!call || call.tool.provider.name !== plugin) {
      throw new StatusError(
        PERMISSION_DENIED,
        `plugin "${plugin}" is not serving tool call ${toolCallId} of session ${parent.id}; RunSession runs a child only for a spawn call in flight`,
      );
    }
    return call;
  }
  const mine = [...parent.inflight.values()].filter(
    (c) => c.tool.provider.name === plugin && c.tool.tool.schema.spawns,
  );
  if (mine.length === 0) {
    throw new StatusError(
      PERMISSION_DENIED,
      `plugin "${plugin}" has no call of a spawn-capable tool (ToolSchema.spawns) in flight for session ${parent.id}; RunSession refused`,
    );
  }
  if (mine.length > 1) {
    throw new StatusError(
      INVALID_ARGUMENT,
      `plugin "${plugin}" has ${mine.length} spawn calls in flight for session ${parent.id}; set RunSessionRequest.tool_call_id`,
    );
  }
  return mine[0]!;
}

function lastAssistant(history: readonly Message[]): Message | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.role === Role.ASSISTANT) return history[i];
  return undefined;
}

export async function runSubagent(
  host: RunSessionHost,
  plugin: string,
  req: RunSessionRequest,
  signal: AbortSignal,
): Promise<RunSessionResponse> {
  const deps = host.deps;
  if (!req.parentSessionId)
    throw new StatusError(INVALID_ARGUMENT, "RunSessionRequest.parent_session_id is required");
  if (!req.prompt.trim()) throw new StatusError(INVALID_ARGUMENT, "RunSessionRequest.prompt is empty");
  const parent = host.session(req.parentSessionId);
  if (!parent) throw new StatusError(NOT_FOUND, `no running session ${req.parentSessionId} in this kernel`);
  const call = callerCall(parent, plugin, req.toolCallId);
  const tool = call.tool;
  if (!tool.tool.schema.spawns) {
    throw new StatusError(
      PERMISSION_DENIED,
      `${tool.provider.name}.${tool.tool.schema.name} does not declare that it spawns sessions (ToolSchema.spawns); RunSession refused`,
    );
  }
  // The risk the gate rated the call by came from this argument: the plugin may not spawn another.
  const named = spawnedProfileName(tool, call.args);
  if (named !== req.profile) {
    throw new StatusError(
      PERMISSION_DENIED,
      `the call was approved for profile "${named ?? ""}", not "${req.profile}"`,
    );
  }
  const profile = getProfile(deps.config, req.profile);
  if (!profile) throw new StatusError(NOT_FOUND, `no agent_profile "${req.profile}" in ${deps.config.file}`);
  if (parent.remainingDepth <= 0) {
    throw new StatusError(
      FAILED_PRECONDITION,
      `session ${parent.id} has no depth budget left for sub-agents (remaining depth ${parent.remainingDepth})`,
    );
  }
  let remainingDepth = childRemainingDepth(parent.remainingDepth, profile);
  // A caller may narrow the budget further, never widen it (0 means "not given").
  if (req.remainingDepth > 0n) remainingDepth = Math.min(remainingDepth, Number(req.remainingDepth));
  const scoped = req.scopedProviders.length > 0 ? new Set(req.scopedProviders.map((p) => p.name)) : undefined;
  let tools: ToolRegistry;
  try {
    tools = ToolRegistry.forProfile(profile, deps.providers, {
      spawn: remainingDepth > 0,
      ...(scoped ? { providers: scoped } : {}),
    });
  } catch (err) {
    throw new StatusError(INVALID_ARGUMENT, (err as Error).message);
  }

  // Everything that cancels the spawn: the RunSession call itself (the plugin gave up or
  // died), the end of the spawning Invoke, and the parent's run (its interrupt cascades).
  const stop = AbortSignal.any([signal, call.ended.signal]);
  if (stop.aborted) throw new StatusError(CANCELLED, "the spawning call ended before the child started");
  const parentSlots = slots(parent);
  if (!(await parentSlots.take(stop))) {
    throw new StatusError(CANCELLED, "the spawning call ended while the child waited for a slot");
  }
  // A forked child starts from copies of its parent's messages (recorded once it exists).
  const forked = profile.fork_parent_history ? parent.history.map((m) => clone(MessageSchema, m)) : undefined;
  let child: Session | undefined;
  try {
    try {
      child = await host.createChild(parent, profile, {
        remainingDepth,
        tools,
        ...(forked ? { history: forked } : {}),
        ...(req.remainingCostBudgetUsd > 0 ? { costLimitUsd: req.remainingCostBudgetUsd } : {}),
        title: req.prompt,
      });
    } catch (err) {
      throw new StatusError(
        FAILED_PRECONDITION,
        `the child session could not start: ${(err as Error).message}`,
      );
    }
    const c = child;
    parent.children.add(c);
    const onStop = () => c.interrupt();
    stop.addEventListener("abort", onStop, { once: true });
    try {
      // The fork the child's conversation started from, recorded so a replay shows it.
      if (forked) {
        for (const message of forked) {
          c.log.persistMessage(
            create(MessageEventSchema, { message, turnId: "", syntheticReason: FORKED_FROM_PARENT }),
          );
        }
      }
      c.subagent?.progress("starting");
      // The child's run starts inside the spawning call's span context: its trace nests there.
      deps.telemetry.withParent(call.trace, () =>
        c.runs.enqueue([
          {
            $typeName: "pluggableharness.content.v1.ContentBlock",
            block: {
              case: "text",
              value: { $typeName: "pluggableharness.content.v1.TextBlock", text: req.prompt },
            },
          },
        ]),
      );
      if (stop.aborted) c.interrupt();
      const status = await c.runs.idle();
      const final = lastAssistant(c.history);
      parent.denials.push(...c.denials);
      deps.log.info(
        `sub-agent ${c.id} (${profile.name}) ended: ${SessionStatus[status]?.toLowerCase()}`,
        { child: c.id, cost_usd: c.cost.spentUsd },
        parent.id,
      );
      return create(RunSessionResponseSchema, {
        sessionId: c.id,
        ...(final ? { finalMessage: final } : {}),
        status,
        totalCostUsd: c.cost.spentUsd,
        totalInputTokens: BigInt(c.cost.inputTokens),
        totalOutputTokens: BigInt(c.cost.outputTokens),
        denials: c.denials,
        detail: c.lastStatusDetail,
      });
    } finally {
      stop.removeEventListener("abort", onStop);
      parent.children.delete(c);
      await host.releaseChild(c).catch(() => {});
    }
  } finally {
    parentSlots.give();
  }
}
