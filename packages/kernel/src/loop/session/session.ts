// One session as the kernel runs it: its state (conversation history, status, plan mode,
// its own policy engine with operator and ALWAYS rules plus SESSION verdicts, the guards:
// cost node, doom loop, breaker, routing memory) and the services that act on it: its
// log (session-log.ts, the kernel is the file's only writer), what waits for a human
// (human-requests.ts) and its runs (run-queue.ts, one at a time, input queued). It is
// the frontend hub's HubSession and SessionControl, which delegate to those services.

import { create, type JsonObject } from "@bufbuild/protobuf";
import type { AgentProfile, PolicyEngine } from "@pluggableharness/config";
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";
import {
  type ClientEvent_InteractiveResponse,
  type ClientEvent_PlanDecision,
  FrontendErrorCategory,
} from "@pluggableharness/protocol/frontend";
import type { ChildDenial } from "@pluggableharness/protocol/kernel";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import {
  Dispatch,
  RegisteredSlashCommandSchema,
  type SlashCommandRegistry,
  SlashCommandRegistrySchema,
} from "@pluggableharness/protocol/slashcommand";
import { ToolKind } from "@pluggableharness/protocol/tool";
import { REOPENABLE_STATUSES, type SessionWriter } from "@pluggableharness/state";
import { checkArguments, type LockOwner } from "../../domain/index.ts";
import { type ServerEventInit, SessionChannel } from "../../frontends/channel.ts";
import type {
  DirectInvokeRequest,
  FrontendErrorInit,
  HubSession,
  SessionControl,
} from "../../frontends/hub.ts";
import { StoredInputs } from "../../frontends/stored-inputs.ts";
import { SubagentLink } from "../../subagents/link.ts";
import type { LoopDeps } from "../deps.ts";
import type { CallContext, InflightCall, TurnPorts } from "../ports.ts";
import { ToolRegistry } from "../tool-registry.ts";
import { CircuitBreaker, CostNode, DoomLoopDetector } from "../turn/bounds.ts";
import { type CompactionContext, CompactionState } from "../turn/compaction.ts";
import { FilesTouched } from "../turn/files-touched.ts";
import { ModelCallState, type ModelCandidate } from "../turn/model-call.ts";
import { profileCandidates } from "./candidates.ts";
import { SessionCheckpoints } from "./checkpoints.ts";
import { Conversation } from "./conversation.ts";
import { commandArguments, PendingRewind } from "./direct-invoke.ts";
import { HumanRequests } from "./human-requests.ts";
import { type RebuiltConversation, rebuildConversation } from "./resume.ts";
import { RunQueue } from "./run-queue.ts";
import type { SessionInput } from "./session-input.ts";
import { SessionLog } from "./session-log.ts";
import type { ModelUsage } from "./session-log-deps.ts";
import { SettingsState } from "./settings-state.ts";
import { attachWidgets } from "./widgets.ts";

export type { InflightCall } from "../ports.ts";
export { profileCandidates } from "./candidates.ts";
export type { AskResolution, InteractiveResolution } from "./human-requests.ts";
export type { SessionInput } from "./session-input.ts";

export type RunStarter = (session: Session, input: SessionInput, signal: AbortSignal) => Promise<void>;

export interface SessionInit {
  readonly writer: SessionWriter;
  readonly profile: AgentProfile;
  readonly workingDirectory: string;
  /**
   * The conversation it starts from (a sub-agent's fork of its parent's), or how to rebuild
   * it once its tools are known (a resume: `Session.conversationFromFile`). Not a write:
   * after this only the two writers change it (conversation.ts).
   */
  readonly history?: Message[] | ((tools: ToolRegistry) => Message[]);
  /** Set for a sub-agent: its parent, and what RunSession resolved for it (subagents/). */
  readonly parent?: Session;
  readonly subagent?: SubagentInit;
  /** The depth budget of a root session (profile max_depth, else the kernel default). */
  readonly remainingDepth?: number;
}

/** What a sub-agent session is given at spawn (subagents/run-session.ts). */
export interface SubagentInit {
  readonly remainingDepth: number;
  /** Its tools: the profile's, narrowed per call, without spawn tools at depth 0. */
  readonly tools: ToolRegistry;
  /** An extra, narrower cost bound from RunSessionRequest.remaining_cost_budget_usd. */
  readonly costLimitUsd?: number;
  /** What it was asked (the title of its tree entry). */
  readonly title: string;
  /** The parent's messages it starts from (profile fork_parent_history), copied. */
  readonly history?: Message[];
}

export class Session implements HubSession, SessionControl {
  readonly id: string;
  readonly profile: AgentProfile;
  readonly parentId: string | undefined;
  /** The spawning session, for a sub-agent. */
  readonly parent: Session | undefined;
  /** Parent, grandparent, ... up to the root (nearest first). */
  readonly ancestors: readonly string[];
  /** 0 for a root session. */
  readonly depth: number;
  /** How many more levels of sub-agents this session may spawn below it. */
  readonly remainingDepth: number;
  /** Sub-agents of this session that are running now (cancelled with it). */
  readonly children = new Set<Session>();
  /** Calls refused to this session and its descendants (reported to the parent). */
  readonly denials: ChildDenial[] = [];
  /** Tree bookkeeping of a sub-agent (progress reports to its ancestors). */
  readonly subagent: SubagentLink | undefined;
  /**
   * Tool calls whose Invoke is running now, by call id: RunSession accepts a spawn only
   * from one of them, and `ended` aborts when that Invoke ends (its children with it).
   */
  readonly inflight = new Map<string, InflightCall>();
  readonly workingDirectory: string;
  readonly writer: SessionWriter;
  readonly channel: SessionChannel;
  readonly policy: PolicyEngine;
  readonly tools: ToolRegistry;
  readonly cost: CostNode;
  readonly doom: DoomLoopDetector;
  readonly breaker: CircuitBreaker;
  readonly deps: LoopDeps;
  /** What the models are sent (conversation.ts): appended by the loop, replaced by compaction or a resume. */
  readonly conversation: Conversation;
  /**
   * Plan mode, the operator's /model choice and what a resume changed; set them through
   * session-settings.ts, which records each change for a resume.
   */
  readonly settings = new SettingsState();
  /** The widgets' latest renders (widgets.ts), and what stops their streams. */
  readonly widgetContent = new Map<string, ServerEventInit>();
  readonly widgetAbort = new AbortController();
  /** What each model served this kernel's runs of the session cost ("<provider>/<model>" keys). */
  readonly usageByModel = new Map<string, ModelUsage>();
  /**
   * "<provider>/<model>" candidates the vendor said it does not serve (model_not_found),
   * with its message: routing skips them for the rest of the session.
   */
  get unavailableModels(): Map<string, string> {
    return this.modelCalls.unavailable;
  }
  /** The files its tool calls named, for context-assemble (files-touched.ts). */
  readonly filesTouched = new FilesTouched();
  /**
   * When to compact, what the operator asked, the estimate's calibration, the last turn's
   * section size and the size of the request being sent (compaction.ts).
   */
  readonly compaction = new CompactionState();
  /** The run's retry budget and the previous request, for cache breakpoints (model-call.ts). */
  readonly modelCalls = new ModelCallState();
  #status: SessionStatus;
  /** What the turn and the gate act through: this session's parts, each narrowed (ports.ts). */
  readonly ports: TurnPorts;
  /** The session file as the loop writes it (session-log.ts). */
  readonly log: SessionLog;
  /** What waits for a human: permission requests and interactive questions (human-requests.ts). */
  readonly humans: HumanRequests;
  /** Its runs, one at a time, and the input queued for the next (run-queue.ts). */
  readonly runs: RunQueue;
  /** File checkpoints around resource calls, for rewind (checkpoints.ts). */
  readonly checkpoints: SessionCheckpoints;
  /**
   * Marked when the operator's command rewound this session (callbacks/rewind.ts): once the
   * command's call is over, every subscriber is told to go on in the fork (direct-invoke.ts).
   */
  readonly rewind = new PendingRewind();

  constructor(deps: LoopDeps, init: SessionInit, startRun: RunStarter) {
    this.deps = deps;
    this.writer = init.writer;
    this.id = init.writer.sessionId;
    this.profile = init.profile;
    this.parentId = init.parent?.id;
    this.parent = init.parent;
    this.ancestors = init.parent ? [init.parent.id, ...init.parent.ancestors] : [];
    this.depth = init.parent ? init.parent.depth + 1 : 0;
    this.remainingDepth =
      init.subagent?.remainingDepth ??
      init.remainingDepth ??
      init.profile.max_depth ??
      deps.settings.default_max_depth;
    this.workingDirectory = init.workingDirectory;
    this.#status = init.writer.meta().status;
    this.log = new SessionLog(this);
    this.humans = new HumanRequests(this);
    this.runs = new RunQueue(this, (input, signal) => startRun(this, input, signal));
    this.checkpoints = new SessionCheckpoints({
      sessionId: this.id,
      workingDirectory: this.workingDirectory,
      writer: init.writer,
      log: deps.log,
    });
    this.channel = new SessionChannel(this.id, (e) => deps.renderer.render(e), deps.log.child("frontends"));
    this.channel.resumeAfter(init.writer.lastSequence());
    this.channel.onSubscribersChanged = () => this.humans.subscribersChanged();
    this.policy = deps.policy.forSession(init.profile.name);
    this.tools =
      init.subagent?.tools ??
      ToolRegistry.forProfile(init.profile, deps.providers, { spawn: this.remainingDepth > 0 });
    const history = init.history ?? init.subagent?.history ?? [];
    this.conversation = new Conversation(typeof history === "function" ? history(this.tools) : history);
    const parentCost =
      init.parent && init.subagent?.costLimitUsd !== undefined
        ? new CostNode(init.subagent.costLimitUsd, init.parent.cost)
        : init.parent?.cost;
    this.cost = new CostNode(init.profile.max_cost_usd, parentCost, init.profile.max_turns);
    this.subagent = init.parent ? new SubagentLink(this, init.subagent?.title ?? "") : undefined;
    void attachWidgets(deps, this);
    this.doom = new DoomLoopDetector(deps.settings.doom_loop_threshold, deps.settings.doom_loop_window);
    this.breaker = new CircuitBreaker(
      {
        consecutive: deps.limits.denialBreaker,
        window: deps.limits.denialWindow,
        sameCall: deps.limits.sameCallDenials,
        turns: deps.limits.deniedTurns,
      },
      deps.limits.crashBreaker,
    );
    const log = this.log;
    const channel = this.channel;
    this.ports = {
      sink: {
        persist: (kind, producer, payload, extras) => log.persist(kind, producer, payload, extras),
        persistBatch: (events) => log.persistBatch(events),
        persistSoon: (kind, producer, payload) => log.persistSoon(kind, producer, payload),
        publish: (event) => channel.publish(event),
      },
      humans: this.humans,
      guards: { breaker: this.breaker, doom: this.doom, cost: this.cost, denials: this.denials },
      tools: {
        sessionId: this.id,
        workingDirectory: this.workingDirectory,
        inflight: this.inflight,
        progress: (activity) => this.subagent?.progress(activity),
        publish: (event) => channel.publish(event),
        commit: () => log.commit(),
      },
      filesTouched: this.filesTouched,
      messages: log,
      conversation: this.conversation,
      registry: this.tools,
      checkpoints: this.checkpoints,
    };
  }

  /** What the gate knows of this session for one batch of calls (a turn's, or an operator's). */
  callContext(turnId: string, signal: AbortSignal): CallContext {
    return {
      sessionId: this.id,
      turnId,
      workingDirectory: this.workingDirectory,
      lockOwner: this.lockOwner,
      remainingDepth: this.remainingDepth,
      signal,
      policy: this.policy,
      hook: { sessionId: this.id, turnId, workingDirectory: this.workingDirectory, signal },
    };
  }

  /**
   * The conversation persisted in a session file (kernel-written message events, records
   * of failed attempts and turns left out), every tool_use answered once (resume.ts).
   */
  static conversationFromFile(writer: SessionWriter, tools?: ToolRegistry): RebuiltConversation {
    const reader = writer.openReader();
    try {
      return rebuildConversation(reader.events(), tools);
    } finally {
      reader.close();
    }
  }

  static historyFromFile(writer: SessionWriter): Message[] {
    return Session.conversationFromFile(writer).history;
  }

  /** The conversation's messages now (read-only; write through `conversation`). */
  get history(): readonly Message[] {
    return this.conversation.messages;
  }

  /** Who this session's tool calls hold locks as (the kernel-wide ToolLocks). */
  get lockOwner(): LockOwner {
    return { session: this.id, ancestors: this.ancestors };
  }

  /** The root of this session's tree (itself for a root session). */
  get root(): Session {
    let s: Session = this;
    while (s.parent) s = s.parent;
    return s;
  }

  // ---- HubSession -----------------------------------------------------------------

  get control(): SessionControl {
    return this;
  }

  info(): SessionInfo {
    return this.writer.info();
  }

  status(): SessionStatus {
    return this.#status;
  }

  openBackfill() {
    const reader = this.writer.openReader();
    return {
      events: (through: number) => new StoredInputs().all(reader.events({ throughSequence: through })),
      close: () => reader.close(),
    };
  }

  /** Direct-invoke commands of the profile's tools, and the prompt expansions the profile allows. */
  slashCommands(): SlashCommandRegistry {
    const allowed = new Set(this.profile.slash_commands);
    const allowAll = allowed.has("*");
    const tools = new Set(this.tools.all().map((t) => `${t.provider.name}\u0000${t.tool.schema.name}`));
    const registry = create(SlashCommandRegistrySchema, {});
    for (const p of this.deps.providers.all()) {
      for (const spec of p.slashCommands) {
        const ok =
          spec.dispatch === Dispatch.DIRECT_INVOKE
            ? tools.has(`${p.name}\u0000${spec.toolName ?? ""}`)
            : spec.dispatch === Dispatch.PROMPT_EXPANSION && (allowAll || allowed.has(spec.name));
        if (ok) registry.commands.push(create(RegisteredSlashCommandSchema, { provider: p.name, spec }));
      }
    }
    return registry;
  }

  /** Moves session_meta's status and tells subscribers. */
  setStatus(status: SessionStatus, detail = ""): void {
    const previous = this.#status;
    if (previous === status) return;
    this.log.commit();
    this.writer.setStatus(status);
    this.#status = status;
    this.channel.publish({
      event: { case: "sessionStatusUpdate", value: { status, previousStatus: previous, detail } },
    });
    this.#lastStatusDetail = detail;
    this.subagent?.progress();
  }

  #lastStatusDetail = "";

  /** The detail of the last status change (why the session ended); setStatus() sets it. */
  get lastStatusDetail(): string {
    return this.#lastStatusDetail;
  }

  /** What a compaction knows of this session outside a turn (/compact, a compactor's summary call). */
  compactionContext(): CompactionContext {
    return {
      sessionId: this.id,
      ...(this.parentId !== undefined ? { parentSessionId: this.parentId } : {}),
      workingDirectory: this.workingDirectory,
      candidates: this.candidates(),
      tools: this.tools.declarations({ planMode: this.settings.planMode }),
    };
  }

  /** The profile's model chain (primary, then fallbacks); without one, the first model loaded. */
  candidates(): ModelCandidate[] {
    const chain = profileCandidates(this.profile, this.deps);
    const o = this.settings.modelOverride;
    if (!o) return chain;
    // The chosen model first; the profile's fallbacks stay behind it.
    return [o, ...chain.filter((c) => !(c.provider === o.provider && c.modelId === o.modelId))];
  }

  // ---- SessionControl ---------------------------------------------------------------

  /** Why new input may not start a run now (a finished session not re-opened by this subscriber). */
  #notRunnable(options: { mayReopen: boolean }): FrontendErrorInit | undefined {
    const status = this.#status;
    if (status === SessionStatus.RUNNING || this.runs.running) return undefined;
    if (!REOPENABLE_STATUSES.has(status)) {
      return {
        category: FrontendErrorCategory.SESSION_REPLAY_ONLY,
        message: `session ${this.id} ended with status ${SessionStatus[status]?.toLowerCase()} and is replay-only`,
      };
    }
    if (!options.mayReopen) {
      return {
        category: FrontendErrorCategory.SESSION_REPLAY_ONLY,
        message: `session ${this.id} is ${SessionStatus[status]?.toLowerCase()}; resume it (resume_session) to continue`,
      };
    }
    return undefined;
  }

  submit(content: ContentBlock[], options: { mayReopen: boolean }): FrontendErrorInit | undefined {
    const refused = this.#notRunnable(options);
    if (refused) return refused;
    this.runs.enqueue(content);
    return undefined;
  }

  /**
   * Queues a call the operator makes without a model turn (a direct-invoke slash command
   * or an action trigger). The tool must be one of this session's; the arguments are
   * mapped (slash command text) and checked against its input schema here, so a typo is
   * answered at once and nothing runs.
   */
  invoke(request: DirectInvokeRequest, options: { mayReopen: boolean }): FrontendErrorInit | undefined {
    const invalid = (message: string): FrontendErrorInit => ({
      category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
      message,
    });
    const what =
      request.origin.kind === "slash_command"
        ? `/${request.origin.name}`
        : request.origin.kind === "mcp_client"
          ? `MCP client "${request.origin.client}"`
          : `action "${request.origin.nodeId}"`;
    const refused = this.#notRunnable(options);
    if (refused) return refused;
    const tool = this.tools
      .all()
      .find((t) => t.provider.name === request.provider && t.tool.schema.name === request.toolName);
    if (!tool) {
      return invalid(
        `${what}: ${request.provider}.${request.toolName} is not one of this session's tools (profile "${this.profile.name}")`,
      );
    }
    if (this.settings.planMode && tool.tool.schema.kind === ToolKind.RESOURCE) {
      return invalid(
        `${what}: ${request.provider}.${request.toolName} changes things, and the session is in plan mode`,
      );
    }
    let args: JsonObject;
    if (typeof request.args === "string") {
      const mapped = commandArguments(request.args, tool.tool.inputJsonSchema);
      if (!mapped.ok) return invalid(`${what}: ${mapped.error}`);
      args = mapped.value;
    } else {
      args = request.args;
    }
    const check = checkArguments(tool.tool.inputJsonSchema, args);
    if (!check.ok) {
      return invalid(
        `${what}: the arguments do not match ${request.provider}.${request.toolName}'s input schema: ${check.errors.join("; ")}`,
      );
    }
    this.runs.enqueueInvocation({
      kind: "invoke",
      invocation: {
        tool,
        args,
        origin: request.origin,
        ...(request.onDone ? { onDone: request.onDone } : {}),
      },
    });
    return undefined;
  }

  interrupt(): void {
    this.runs.interrupt();
  }

  /**
   * The kernel's "compact now" operation (what /compact calls): queued like a message, it
   * runs one compaction pass with reason OPERATOR and no model turn. `instructions` guide
   * the summary ("keep the API decisions"); empty for none.
   */
  compact(instructions: string, options: { mayReopen: boolean }): FrontendErrorInit | undefined {
    const refused = this.#notRunnable(options);
    if (refused) return refused;
    if (!this.deps.providers.contextProviders().some((p) => p.context?.compactor === true)) {
      return {
        category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
        message:
          'no compactor context provider is configured for this session (add the first-party "compactor" provider to agent.hcl)',
      };
    }
    this.runs.enqueueInvocation({ kind: "compact", instructions });
    return undefined;
  }

  decide(d: ClientEvent_PlanDecision): FrontendErrorInit | undefined {
    return this.humans.decide(d);
  }

  respond(r: ClientEvent_InteractiveResponse): FrontendErrorInit | undefined {
    return this.humans.respond(r);
  }

  pendingRequests(): ServerEventInit[] {
    // What the widgets show now comes first: a frontend attaching draws them at once.
    return [...this.widgetContent.values(), ...this.humans.pendingRequests()];
  }
}
