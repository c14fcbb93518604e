// One session as the kernel runs it: its state file (the kernel is its only writer),
// its conversation history, its frontend channel, its own policy engine (operator and
// ALWAYS rules plus SESSION verdicts), the guards (cost node, doom loop, breaker), the
// requests waiting for a human, and the run currently executing. A session runs one
// run at a time; user messages arriving meanwhile queue for the next run.
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import {
  type AgentProfile,
  narrowestScope,
  type PolicyEngine,
  PolicyStoreError,
  recordAlwaysDecision,
} from "@pluggableharness/config";
import { type ContentBlock, type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { type MessageEvent, MessageEventSchema } from "@pluggableharness/protocol/event";
import {
  ClientDecision,
  type ClientEvent_InteractiveResponse,
  type ClientEvent_PlanDecision,
  FrontendErrorCategory,
} from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { PlanDecisionScope, type PlanItem } from "@pluggableharness/protocol/plan";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import {
  Dispatch,
  RegisteredSlashCommandSchema,
  type SlashCommandRegistry,
  SlashCommandRegistrySchema,
} from "@pluggableharness/protocol/slashcommand";
import { ToolKind } from "@pluggableharness/protocol/tool";
import {
  type AppendedEvent,
  type CostEntry,
  costEntriesFromMessage,
  eventKindText,
  type PlanItemEntry,
  type ProducerIdentity,
  REOPENABLE_STATUSES,
  type SessionWriter,
} from "@pluggableharness/state";
import { type AccumulatedCompletion, checkArguments, type PreviousRequestPrefix } from "../domain/index.ts";
import { type ServerEventInit, SessionChannel } from "../frontends/channel.ts";
import type { DirectInvokeRequest, FrontendErrorInit, HubSession, SessionControl } from "../frontends/hub.ts";
import { StoredInputs } from "../frontends/stored-inputs.ts";
import { CircuitBreaker, CostNode, DoomLoopDetector } from "./bounds.ts";
import type { LoopDeps } from "./deps.ts";
import { commandArguments, type DirectInvocation } from "./direct-invoke.ts";
import { type ModelCandidate, paramsFromConfig, type ResolvedCandidate } from "./model-call.ts";
import { ATTEMPT_FAILED_PREFIX, TURN_FAILED_REASON } from "./records.ts";
import { type RebuiltConversation, rebuildConversation } from "./resume.ts";
import { type SessionTool, ToolRegistry } from "./tool-registry.ts";

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

interface PendingAsk {
  readonly item: PlanItem;
  readonly tool: SessionTool;
  readonly resolve: (r: AskResolution) => void;
}

interface PendingInteractive {
  readonly request: ServerEventInit;
  readonly tool: SessionTool;
  readonly resolve: (r: InteractiveResolution) => void;
}

/** What a run starts from: a user message, or a tool call the operator made directly. */
export type SessionInput =
  | { readonly kind: "message"; readonly content: ContentBlock[] }
  | { readonly kind: "invoke"; readonly invocation: DirectInvocation };

export type RunStarter = (session: Session, input: SessionInput, signal: AbortSignal) => Promise<void>;

/** An event written in a batch (schema version "1"). */
interface BatchedEvent {
  readonly kind: EventKind;
  readonly producer: ProducerIdentity;
  /** What is stored. */
  readonly payload: Uint8Array;
  /** What live subscribers render, when the stored payload leaves something out (stored-inputs.ts). */
  readonly live?: Uint8Array;
}

export interface SessionInit {
  readonly writer: SessionWriter;
  readonly profile: AgentProfile;
  readonly workingDirectory: string;
  readonly history?: Message[];
  readonly parent?: { readonly id: string; readonly cost: CostNode };
}

export class Session implements HubSession, SessionControl {
  readonly id: string;
  readonly profile: AgentProfile;
  readonly parentId: string | undefined;
  readonly workingDirectory: string;
  readonly writer: SessionWriter;
  readonly channel: SessionChannel;
  readonly policy: PolicyEngine;
  readonly tools: ToolRegistry;
  readonly cost: CostNode;
  readonly doom: DoomLoopDetector;
  readonly breaker: CircuitBreaker;
  readonly deps: LoopDeps;
  history: Message[];
  planMode = false;
  retriesUsed = 0;
  /**
   * "<provider>/<model>" candidates the vendor said it does not serve (model_not_found),
   * with its message: routing skips them for the rest of the session.
   */
  readonly unavailableModels = new Map<string, string>();
  assembledTokensLastTurn = 0;
  previousToolsFingerprint: string | undefined;
  /** The previous model request's prefix, for conversation cache breakpoints. */
  previousRequest: PreviousRequestPrefix | undefined;
  #status: SessionStatus;
  /** Events persistSoon() queued for the end of this event-loop turn. */
  #soon: BatchedEvent[] = [];
  readonly #asks = new Map<string, PendingAsk>();
  readonly #interactives = new Map<string, PendingInteractive>();
  readonly #settled = new Set<string>();
  readonly #inputs: SessionInput[] = [];
  #run: { controller: AbortController; done: Promise<void> } | undefined;
  #idleWaiters: Array<(s: SessionStatus) => void> = [];
  #stopped = false;
  /** Starts a run; set by the kernel (breaks the module cycle with the driver). */
  readonly #startRun: RunStarter;

  constructor(deps: LoopDeps, init: SessionInit, startRun: RunStarter) {
    this.deps = deps;
    this.writer = init.writer;
    this.id = init.writer.sessionId;
    this.profile = init.profile;
    this.parentId = init.parent?.id;
    this.workingDirectory = init.workingDirectory;
    this.history = init.history ?? [];
    this.#status = init.writer.meta().status;
    this.#startRun = startRun;
    this.channel = new SessionChannel(this.id, (e) => deps.renderer.render(e), deps.log.child("frontends"));
    this.channel.resumeAfter(init.writer.lastSequence());
    this.channel.onSubscribersChanged = () => this.#subscribersChanged();
    this.policy = deps.policy.forSession(init.profile.name);
    this.tools = ToolRegistry.forProfile(init.profile, deps.providers);
    this.cost = new CostNode(init.profile.max_cost_usd, init.parent?.cost);
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
    const tools = new Set(this.tools.all().map((t) => `${t.provider.name}\u0000${t.tool.schema.name}`));
    const registry = create(SlashCommandRegistrySchema, {});
    for (const p of this.deps.providers.all()) {
      for (const spec of p.slashCommands) {
        const ok =
          spec.dispatch === Dispatch.DIRECT_INVOKE
            ? tools.has(`${p.name}\u0000${spec.toolName ?? ""}`)
            : spec.dispatch === Dispatch.PROMPT_EXPANSION && allowed.has(spec.name);
        if (ok) registry.commands.push(create(RegisteredSlashCommandSchema, { provider: p.name, spec }));
      }
    }
    return registry;
  }

  // ---- persistence ---------------------------------------------------------------

  /** Appends an event and queues its render for subscribed frontends. */
  persist(
    kind: EventKind,
    producer: ProducerIdentity,
    payload: Uint8Array,
    extras: {
      costs?: readonly CostEntry[];
      planItems?: readonly PlanItemEntry[];
      schemaVersion?: string;
      /** What live subscribers render, when `payload` leaves something out. */
      live?: Uint8Array;
    } = {},
  ): AppendedEvent {
    const schemaVersion = extras.schemaVersion ?? "1";
    const event = {
      kind,
      producer,
      schemaVersion,
      payload,
      ...(extras.costs ? { costs: extras.costs } : {}),
      ...(extras.planItems ? { planItems: extras.planItems } : {}),
    };
    let appended: AppendedEvent;
    if (this.#soon.length === 0) appended = this.writer.append(event);
    else {
      // Queued tool results go first, in the same transaction (typically: the results, then
      // the user message that carries them to the model: one sync to disk, not two).
      const queued = this.#soon;
      this.#soon = [];
      const all = this.writer.appendBatch([
        ...queued.map((e) => ({
          kind: e.kind,
          producer: e.producer,
          payload: e.payload,
          schemaVersion: "1",
        })),
        event,
      ]);
      this.#publishBatch(queued, all);
      appended = all.at(-1)!;
    }
    this.channel.publishPersisted({
      sequence: appended.sequence,
      kind,
      kindText: eventKindText(kind),
      producer,
      schemaVersion,
      payload: extras.live ?? payload,
    });
    return appended;
  }

  /**
   * Appends several events in one transaction (one sync to disk instead of one each), in
   * order, and queues their renders like persist() does.
   */
  persistBatch(events: readonly BatchedEvent[]): AppendedEvent[] {
    const queued = this.#soon;
    this.#soon = [];
    return this.#appendBatch([...queued, ...events]).slice(queued.length);
  }

  /**
   * Appends an event at the end of this event-loop turn, in one transaction with the other
   * events queued in the same turn (results of parallel calls that arrive together share
   * one sync to disk). Order is kept: every other write empties the queue first (persist
   * and persistBatch in the same transaction as their own events).
   */
  persistSoon(kind: EventKind, producer: ProducerIdentity, payload: Uint8Array): void {
    this.#soon.push({ kind, producer, payload });
    if (this.#soon.length > 1) return;
    setImmediate(() => {
      try {
        this.flushPersistSoon();
      } catch (err) {
        // Nobody awaits this write; a failure (a writer closed under it) is logged, not thrown.
        this.deps.log.error("could not persist queued events", { error: (err as Error).message }, this.id);
      }
    });
  }

  /** Writes what persistSoon() queued, now. */
  flushPersistSoon(): void {
    if (this.#soon.length === 0) return;
    const queued = this.#soon;
    this.#soon = [];
    this.#appendBatch(queued);
  }

  #appendBatch(events: readonly BatchedEvent[]): AppendedEvent[] {
    const appended = this.writer.appendBatch(
      events.map((e) => ({ kind: e.kind, producer: e.producer, payload: e.payload, schemaVersion: "1" })),
    );
    this.#publishBatch(events, appended);
    return appended;
  }

  /** Queues the renders of `events`, appended as `appended` (same order). */
  #publishBatch(events: readonly BatchedEvent[], appended: readonly AppendedEvent[]): void {
    events.forEach((e, i) => {
      this.channel.publishPersisted({
        sequence: appended[i]!.sequence,
        kind: e.kind,
        kindText: eventKindText(e.kind),
        producer: e.producer,
        schemaVersion: "1",
        payload: e.live ?? e.payload,
      });
    });
  }

  /** Persists a message event with its ledger rows, charges its cost and reports usage. */
  persistMessage(event: MessageEvent, servedBy?: { providerName: string; modelId: string }): AppendedEvent {
    const costs = event.usage.length > 0 ? costEntriesFromMessage(event, servedBy) : [];
    let running = this.writer.costUsd();
    const appended = this.persist(
      EventKind.MESSAGE,
      this.deps.kernelProducer,
      toBinary(MessageEventSchema, event),
      {
        ...(costs.length > 0 ? { costs } : {}),
      },
    );
    for (const c of costs) {
      this.cost.charge(c.costUsd);
      running += c.costUsd;
      const remaining = this.cost.remainingUsd();
      this.channel.publish({
        event: {
          case: "usageUpdate",
          value: {
            turnId: event.turnId,
            providerName: c.providerName,
            modelId: c.modelId,
            inputTokens: BigInt(c.inputTokens),
            outputTokens: BigInt(c.outputTokens),
            cacheWriteTokens: BigInt(c.cacheWriteTokens ?? 0),
            cacheReadTokens: BigInt(c.cacheReadTokens ?? 0),
            costUsd: c.costUsd,
            sessionCostUsd: running,
            ...(Number.isFinite(remaining) ? { remainingCostBudgetUsd: remaining } : {}),
          },
        },
      });
    }
    return appended;
  }

  /** A user-role message (prompt, tool results, kernel instruction): persisted and appended to history. */
  appendUserMessage(turnId: string, content: ContentBlock[], syntheticReason = ""): Message {
    const message = create(MessageSchema, { role: Role.USER, content, id: this.deps.newId() });
    this.persistMessage(create(MessageEventSchema, { message, turnId, syntheticReason }));
    this.history.push(message);
    return message;
  }

  /** An attempt that was billed and then failed: persisted for the ledger, kept out of the history. */
  persistFailedAttempt(
    turnId: string,
    candidate: ResolvedCandidate,
    completion: AccumulatedCompletion,
    category: string,
  ): void {
    this.persistMessage(
      create(MessageEventSchema, {
        message: completion.message,
        turnId,
        model: { provider: candidate.provider.name, id: candidate.spec.id },
        usage: [...completion.usage],
        costUsd: completion.costUsd,
        ...(completion.providerRequestId ? { providerRequestId: completion.providerRequestId } : {}),
        syntheticReason: `${ATTEMPT_FAILED_PREFIX}${category}`,
      }),
    );
  }

  /**
   * A turn failed (its model kept failing, a hook broke the request, the kernel hit an
   * error): the reason goes to the log and into the session file, and the session stays
   * open for the next message.
   */
  recordTurnFailure(turnId: string, detail: string): void {
    this.deps.log.error(`the turn failed: ${detail}`, { turn: turnId }, this.id);
    const text = `The turn failed: ${detail}. The session is still open: send another message to go on.`;
    const message = create(MessageSchema, {
      role: Role.ASSISTANT,
      id: this.deps.newId(),
      content: [{ block: { case: "text", value: { text } } }],
    });
    this.persistMessage(create(MessageEventSchema, { message, turnId, syntheticReason: TURN_FAILED_REASON }));
  }

  /** Moves session_meta's status and tells subscribers. */
  setStatus(status: SessionStatus, detail = ""): void {
    const previous = this.#status;
    if (previous === status) return;
    this.flushPersistSoon();
    this.writer.setStatus(status);
    this.#status = status;
    this.channel.publish({
      event: { case: "sessionStatusUpdate", value: { status, previousStatus: previous, detail } },
    });
  }

  /** The profile's model chain (primary, then fallbacks); without one, the first model loaded. */
  candidates(): ModelCandidate[] {
    return profileCandidates(this.profile, this.deps);
  }

  // ---- runs ------------------------------------------------------------------------

  get running(): boolean {
    return this.#run !== undefined;
  }

  /** Queues a user message and starts a run if none is active. */
  enqueue(content: ContentBlock[]): void {
    this.#inputs.push({ kind: "message", content });
    this.#kick();
  }

  /** Resolves with the status once no run is active and no input is queued. */
  idle(): Promise<SessionStatus> {
    if (!this.#run && this.#inputs.length === 0) return Promise.resolve(this.#status);
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops for good: cancels the current run and drops queued input (kernel shutdown). */
  stop(): void {
    this.#stopped = true;
    this.#inputs.length = 0;
    this.interrupt();
  }

  #kick(): void {
    if (this.#run) return;
    if (this.#stopped) this.#inputs.length = 0;
    const input = this.#inputs.shift();
    if (!input) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w(this.#status);
      return;
    }
    if (this.#status !== SessionStatus.RUNNING && !REOPENABLE_STATUSES.has(this.#status)) {
      this.deps.log.warn(
        "queued message dropped: the session ended and cannot be re-opened",
        {
          status: SessionStatus[this.#status],
        },
        this.id,
      );
      this.channel.publish({
        event: {
          case: "error",
          value: {
            error: {
              category: FrontendErrorCategory.SESSION_REPLAY_ONLY,
              message: `a queued message was not run: the session ended with status ${SessionStatus[this.#status]?.toLowerCase()}`,
            },
          },
        },
      });
      this.#kick();
      return;
    }
    const controller = new AbortController();
    const done = this.#startRun(this, input, controller.signal)
      .catch((err: unknown) => {
        this.deps.log.error(
          "session run failed unexpectedly",
          { error: (err as Error).stack ?? String(err) },
          this.id,
        );
        if (this.#status === SessionStatus.RUNNING) {
          try {
            this.recordTurnFailure(this.deps.newId(), `kernel error: ${(err as Error).message}`);
            this.setStatus(SessionStatus.FAILED, `kernel error: ${(err as Error).message}`);
          } catch {
            // the file may be gone (shutdown)
          }
        }
      })
      .finally(() => {
        this.#run = undefined;
        this.#kick();
      });
    this.#run = { controller, done };
  }

  /** Waits for the current run (if any) to finish. */
  async waitRun(): Promise<void> {
    await this.#run?.done;
  }

  // ---- SessionControl ---------------------------------------------------------------

  /** Why new input may not start a run now (a finished session not re-opened by this subscriber). */
  #notRunnable(options: { mayReopen: boolean }): FrontendErrorInit | undefined {
    const status = this.#status;
    if (status === SessionStatus.RUNNING || this.#run) return undefined;
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
    this.enqueue(content);
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
    if (this.planMode && tool.tool.schema.kind === ToolKind.RESOURCE) {
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
    this.#inputs.push({ kind: "invoke", invocation: { tool, args, origin: request.origin } });
    this.#kick();
    return undefined;
  }

  interrupt(): void {
    this.#run?.controller.abort(new Error("interrupted"));
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
              cwd: this.workingDirectory,
            },
            { secretValues: this.deps.secretValues },
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
        const rules = recordAlwaysDecision(this.deps.projectDir, {
          provider,
          tool_name: toolName,
          decision: allow ? "allow" : "deny",
          profile: this.profile.name,
          scopes: remember!.ok ? remember!.scopes : [{}],
        });
        for (const rule of rules) {
          this.deps.policy.addAlwaysRule(rule);
          this.policy.addAlwaysRule(rule);
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
        this.policy.rememberForSession(provider, toolName, allow ? "allow" : "deny", sc);
      }
    }
    this.#settle(d.planItemId);
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
    pending.resolve({ kind: "answered", payload });
    return undefined;
  }

  pendingRequests(): ServerEventInit[] {
    return [
      ...[...this.#asks.values()].map(
        (a): ServerEventInit => ({ event: { case: "permissionRequest", value: { planItem: a.item } } }),
      ),
      ...[...this.#interactives.values()].map((i) => i.request),
    ];
  }

  // ---- waiting for humans -----------------------------------------------------------------

  /** Settles an `ask`: a permission request to interactive frontends, else the headless rule. */
  ask(item: PlanItem, tool: SessionTool, signal: AbortSignal): Promise<AskResolution> {
    if (signal.aborted) return Promise.resolve({ decision: "cancelled", decidedBy: "interrupt" });
    if (!this.channel.hasInteractiveSubscriber()) return Promise.resolve(this.#headlessAsk());
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#asks.delete(item.id);
        this.#settle(item.id);
        resolve({ decision: "cancelled", decidedBy: "interrupt" });
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#asks.set(item.id, {
        item,
        tool,
        resolve: (r) => {
          signal.removeEventListener("abort", onAbort);
          this.#asks.delete(item.id);
          resolve(r);
        },
      });
      this.channel.publish({ event: { case: "permissionRequest", value: { planItem: item } } });
    });
  }

  /** Puts an interactive call's question to the attached human. */
  question(
    callId: string,
    request: ServerEventInit,
    tool: SessionTool,
    signal: AbortSignal,
  ): Promise<InteractiveResolution> {
    if (signal.aborted) return Promise.resolve({ kind: "cancelled" });
    if (!this.channel.hasInteractiveSubscriber()) {
      return Promise.resolve({
        kind: "unanswered",
        reason: "no human is attached to answer (headless session)",
      });
    }
    return new Promise((resolve) => {
      const onAbort = () => {
        this.#interactives.delete(callId);
        this.#settle(callId);
        resolve({ kind: "cancelled" });
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#interactives.set(callId, {
        request,
        tool,
        resolve: (r) => {
          signal.removeEventListener("abort", onAbort);
          this.#interactives.delete(callId);
          resolve(r);
        },
      });
      this.channel.publish(request);
    });
  }

  #settle(id: string): void {
    this.#settled.add(id);
  }

  #headlessAsk(): AskResolution {
    if (this.deps.headlessAsk === "allow") return { decision: "allow", decidedBy: "headless:allow" };
    return {
      decision: "deny",
      decidedBy: "headless:deny",
      reason: "no human is attached to approve this call, and the operator's headless setting denies asks",
    };
  }

  /** The last interactive frontend left: nobody can answer what is pending, so it never waits. */
  #subscribersChanged(): void {
    if (this.channel.hasInteractiveSubscriber()) return;
    for (const [id, a] of [...this.#asks]) {
      this.#settle(id);
      a.resolve(this.#headlessAsk());
    }
    for (const [id, q] of [...this.#interactives]) {
      this.#settle(id);
      q.resolve({ kind: "unanswered", reason: "the interactive frontend detached before answering" });
    }
  }
}

/** A profile's model chain (primary, then fallbacks); without one, the first model loaded. */
export function profileCandidates(
  profile: AgentProfile,
  deps: Pick<LoopDeps, "providers">,
): ModelCandidate[] {
  const m = profile.model;
  if (m) {
    return [m.primary, ...m.fallbacks].map((r) => {
      const params = paramsFromConfig(r.params);
      return {
        provider: r.provider,
        modelId: r.id,
        ...(params ? { params } : {}),
        ...(r.provider_options ? { providerOptions: r.provider_options } : {}),
      };
    });
  }
  for (const p of deps.providers.modelProviders()) {
    const first = p.models?.models.keys().next().value;
    if (first !== undefined) return [{ provider: p.name, modelId: first }];
  }
  return [];
}
