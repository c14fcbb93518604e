// What one turn runs with, and the narrow ports it acts through. A leaf of the loop: it
// names types only, and none from session.ts, so a step that takes `(deps, ctx, ports)`
// stays out of the type cycle that `Session` closes (layering.test.ts keeps it so).
//
// TurnContext is fixed when the turn starts (turn.ts builds it once); what changes while
// the turn runs goes through a port: the sink writes the session file and tells the
// frontends, the human port asks, the guards count.
import type { JsonObject } from "@bufbuild/protobuf";
import type { PolicyEngine } from "@pluggableharness/config";
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";
import type { MessageEvent } from "@pluggableharness/protocol/event";
import type { ChildDenial, EventKind } from "@pluggableharness/protocol/kernel";
import type { GenerationParams, ToolDeclaration } from "@pluggableharness/protocol/model";
import type { PlanItem } from "@pluggableharness/protocol/plan";
import type { AppendedEvent, CostEntry, PlanItemEntry, ProducerIdentity } from "@pluggableharness/state";
import type { AccumulatedCompletion, LockOwner } from "../domain/index.ts";
import type { ServerEventInit } from "../frontends/channel.ts";
import type { HookContext } from "../hooks/dispatcher.ts";
import type { SessionTool, ToolRegistry } from "./tool-registry.ts";
import type { CircuitBreaker, CostNode, DoomLoopDetector } from "./turn/bounds.ts";
import type { FilesTouched } from "./turn/files-touched.ts";

/** One model in a session's chain (the profile's entry, or the operator's /model choice). */
export interface ModelCandidate {
  /** Local name of the model provider. */
  readonly provider: string;
  readonly modelId: string;
  readonly params?: GenerationParams;
  /** The candidate's `provider_options`, copied into its requests and never read here. */
  readonly providerOptions?: JsonObject;
}

/** The profile bounds a turn checks after its tools ran. */
export interface TurnLimits {
  readonly maxTurns?: number;
  readonly maxWallClockS?: number;
  /** A sub-agent's deadline inherited from its parent's run (clock ms): its parent's run ends then. */
  readonly inheritedDeadline?: number;
}

/** Everything a turn knows when it starts; nothing in it changes until the turn ends. */
export interface TurnContext {
  readonly sessionId: string;
  /** The spawning session of a sub-agent, and every session above it (nearest first). */
  readonly parentSessionId?: string;
  readonly ancestors: readonly string[];
  readonly turnId: string;
  readonly workingDirectory: string;
  /** Who the turn's tool calls hold the kernel-wide locks as. */
  readonly lockOwner: LockOwner;
  /** How many more levels of sub-agents this session may spawn (rates a spawn's risk). */
  readonly remainingDepth: number;
  readonly signal: AbortSignal;
  /** When waiting for the model must end (clock ms), when the run has a bound. */
  readonly deadline?: number;
  /** The tools offered this turn (none on a forced final turn; resources left out in plan mode). */
  readonly tools: readonly ToolDeclaration[];
  /** The model chain this turn routes over, the operator's choice first. */
  readonly candidates: readonly ModelCandidate[];
  readonly limits: TurnLimits;
  /** The session's policy, as the gate consults it. */
  readonly policy: Pick<PolicyEngine, "evaluate">;
  /** What every hook dispatched by this turn is told. */
  readonly hook: HookContext;
}

/** The session's identity and place as the gate needs it (a turn's or an operator's call). */
export type CallContext = Pick<
  TurnContext,
  "sessionId" | "turnId" | "workingDirectory" | "lockOwner" | "remainingDepth" | "signal" | "policy" | "hook"
>;

/** Writes the session file and tells subscribed frontends (SessionLog and the channel behind it). */
export interface EventSink {
  persist(
    kind: EventKind,
    producer: ProducerIdentity,
    payload: Uint8Array,
    extras?: {
      costs?: readonly CostEntry[];
      planItems?: readonly PlanItemEntry[];
      schemaVersion?: string;
      live?: Uint8Array;
    },
  ): AppendedEvent;
  persistBatch(
    events: readonly {
      kind: EventKind;
      producer: ProducerIdentity;
      payload: Uint8Array;
      live?: Uint8Array;
    }[],
  ): AppendedEvent[];
  /** The same as persist() now that every append joins its event-loop turn's group commit (session-log.ts). */
  persistSoon(kind: EventKind, producer: ProducerIdentity, payload: Uint8Array): void;
  /** A live-only event (not stored). */
  publish(event: ServerEventInit): void;
}

/** How a plan item's ask was settled. */
export interface AskResolution {
  readonly decision: "allow" | "deny" | "cancelled";
  readonly decidedBy: string;
  readonly reason?: string;
  readonly correctedInput?: JsonObject;
}

/** How an interactive call's question was settled. */
export type InteractiveResolution =
  | { readonly kind: "answered"; readonly payload: JsonObject }
  | { readonly kind: "unanswered"; readonly reason: string }
  | { readonly kind: "cancelled" };

/** Puts a decision or a question to the attached human (human-requests.ts). */
export interface HumanPort {
  ask(item: PlanItem, tool: SessionTool, signal: AbortSignal): Promise<AskResolution>;
  question(
    callId: string,
    request: ServerEventInit,
    tool: SessionTool,
    signal: AbortSignal,
  ): Promise<InteractiveResolution>;
}

/** The session's guards, and the refusals reported up to a parent session. */
export interface Guards {
  readonly breaker: CircuitBreaker;
  readonly doom: DoomLoopDetector;
  readonly cost: CostNode;
  readonly denials: ChildDenial[];
}

/** A tool call whose Invoke is running now (RunSession accepts a spawn only from one). */
export interface InflightCall {
  readonly tool: SessionTool;
  readonly args: JsonObject;
  /** Aborts when that Invoke ends (the sub-agents it spawned with it). */
  readonly ended: AbortController;
  /** The call's span context (telemetry/): RunSession makes a child session its child. */
  readonly trace?: Readonly<Record<string, string>>;
}

/** What running a tool call touches of its session (tool-exec.ts). */
export interface ToolCallScope {
  readonly sessionId: string;
  readonly workingDirectory: string;
  /** The calls running now, by call id. */
  readonly inflight: Map<string, InflightCall>;
  /**
   * Tells a sub-agent's ancestors what it is doing now ("" when idle; no argument: only its
   * counters changed, a turn began); nothing for a root session.
   */
  progress(activity?: string): void;
  /** A live-only event for the session's frontends (streamed tool output). */
  publish(event: ServerEventInit): void;
  /** Makes the session's writes so far durable: called before a tool runs (session-log.ts). */
  commit(): void;
}

/** The model the kernel sent a request to (a routed candidate, as a record names it). */
export interface ServedBy {
  readonly provider: { readonly name: string };
  readonly spec: { readonly id: string };
}

/** The session's message events as the model call and compaction write them (session-log.ts). */
export interface MessageLog {
  /** A message event with its ledger rows; its cost is charged and usage reported. */
  persistMessage(event: MessageEvent, servedBy?: { providerName: string; modelId: string }): AppendedEvent;
  /** A failed attempt that was billed or got a request id: kept for the ledger, not the history. */
  persistFailedAttempt(
    turnId: string,
    candidate: ServedBy,
    completion: AccumulatedCompletion,
    category: string,
  ): void;
  /** A user-role message (tool results, a kernel instruction): persisted and appended to the conversation. */
  appendUserMessage(turnId: string, content: ContentBlock[], syntheticReason?: string): Message;
}

/** The conversation the models are sent, as a compaction reads and replaces it (conversation.ts). */
export interface ConversationPort {
  readonly messages: readonly Message[];
  /** The turn's assistant message, as the models will be sent it. */
  append(message: Message): void;
  replace(messages: Message[]): void;
}

/** File checkpoints around a turn's resource calls, for rewind (checkpoints.ts). */
export interface CheckpointPort {
  /** `paths`: the only files the step's calls can change (written-paths.ts); absent: any file. */
  before(paths?: readonly string[]): void;
  /** `paths`: those files as the calls ran (a human may have corrected an argument). */
  after(turnId: string, paths?: readonly string[]): void;
}

/** What a turn step and the gate write through; the session builds it once. */
export interface TurnPorts {
  readonly sink: EventSink;
  readonly humans: HumanPort;
  readonly guards: Guards;
  readonly tools: ToolCallScope;
  /** The files the session's tool calls named, for context providers (files-touched.ts). */
  readonly filesTouched: FilesTouched;
  readonly messages: MessageLog;
  readonly conversation: ConversationPort;
  /** The session's tools: declarations for a request, a streamed call's tool by name. */
  readonly registry: Pick<ToolRegistry, "get" | "declarations">;
  readonly checkpoints: CheckpointPort;
}
