// The kernel's FrontendPort: every frontend connection (the CLI's headless printer, the
// terminal UI through the Attach adapter, tests) lands here. A connection subscribes to
// sessions with the control events, receives each subscribed session's ServerEvents in
// that session's one order, and drives sessions with user messages, decisions and
// interrupts. Control answers and errors go only to the connection that asked.
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { CodedError } from "@pluggableharness/protocol/coded-error";
import { type ContentBlock, ContentBlockSchema } from "@pluggableharness/protocol/content";
import {
  type ClientEvent,
  type ClientEvent_InteractiveResponse,
  type ClientEvent_PlanDecision,
  ClientEventSchema,
  FrontendErrorCategory,
  type ServerEvent,
  ServerEventSchema,
} from "@pluggableharness/protocol/frontend";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import type { SlashCommandRegistry } from "@pluggableharness/protocol/slashcommand";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";
import { REPLAY_ONLY_STATUSES } from "@pluggableharness/state";
import type { KernelLogger } from "../log.ts";
import type {
  ClientEventInit,
  ConnectOptions,
  FrontendConnection,
  FrontendPort,
  RenderPreference,
} from "../loop/frontend-port.ts";
import type { DirectInvocation, InvocationOrigin } from "../loop/session/direct-invocation.ts";
import type { BackfillSource, ServerEventInit, SessionChannel, Subscriber } from "./channel.ts";
import { AsyncQueue } from "./queue.ts";

export interface FrontendErrorInit {
  readonly category: FrontendErrorCategory;
  readonly message: string;
}

/** A failure answering a control event, with the category the frontend sees. */
export class FrontendRequestError extends CodedError<FrontendErrorCategory> {
  override readonly name = "FrontendRequestError";
  /** The frontend protocol names the code a category. */
  get category(): FrontendErrorCategory {
    return this.code;
  }
}

/** A tool call the operator asks for directly: a direct-invoke slash command or an action trigger. */
export interface DirectInvokeRequest {
  /** The tool provider's local name. */
  readonly provider: string;
  readonly toolName: string;
  /** A slash command's raw argument text (mapped to the input), or an action's arguments. */
  readonly args: string | JsonObject;
  readonly origin: InvocationOrigin;
  /** Called once the call has gone through the gate. */
  readonly onDone?: DirectInvocation["onDone"];
}

/** What a running (or runnable) session lets frontends do. */
export interface SessionControl {
  /** A new user message. `mayReopen`: the subscription was made by create or resume. */
  submit(content: ContentBlock[], options: { mayReopen: boolean }): FrontendErrorInit | undefined;
  /** A tool call with no model turn, queued like a message. */
  invoke(request: DirectInvokeRequest, options: { mayReopen: boolean }): FrontendErrorInit | undefined;
  interrupt(): void;
  /** "Compact now" (/compact): one compaction pass, queued like a message (loop/turn/compaction.ts). */
  compact(instructions: string, options: { mayReopen: boolean }): FrontendErrorInit | undefined;
  decide(decision: ClientEvent_PlanDecision): FrontendErrorInit | undefined;
  respond(response: ClientEvent_InteractiveResponse): FrontendErrorInit | undefined;
  /** Permission and interactive requests still waiting for an answer. */
  pendingRequests(): ServerEventInit[];
}

export interface HubSession {
  readonly id: string;
  readonly channel: SessionChannel;
  info(): SessionInfo;
  status(): SessionStatus;
  /** The persisted history for a backfill; `close` releases what it opened. */
  openBackfill(): BackfillSource & { close(): void };
  /** Absent for sessions this kernel can only replay. */
  readonly control?: SessionControl;
  /** The profile's aggregated slash commands. */
  slashCommands(): SlashCommandRegistry | undefined;
}

export interface CreateSessionRequest {
  readonly profile: string;
  readonly workingDirectory: string;
  readonly prompt: ContentBlock[];
}

export interface ListSessionsRequest {
  readonly status?: SessionStatus;
  readonly parentSessionId?: string;
  readonly rootsOnly: boolean;
}

/** The kernel side the hub drives. Failures throw FrontendRequestError. */
export interface SessionService {
  createSession(request: CreateSessionRequest): Promise<HubSession>;
  /** A session by id, loaded from its file when it is not live in this kernel. */
  openSession(sessionId: string, intent: "attach" | "resume"): Promise<HubSession>;
  listSessions(request: ListSessionsRequest): SessionInfo[];
  /** Starts the first run of a session created with a prompt (after the creator subscribed). */
  startCreated(session: HubSession, prompt: ContentBlock[]): void;
}

interface Subscription {
  readonly session: HubSession;
  /** New turns are refused (a plain attach to a terminal session, a replay-only resume). */
  readonly replayOnly: boolean;
  /** The subscription may re-open a COMPLETED or CANCELLED session (create, resume). */
  readonly mayReopen: boolean;
}

let connectionCounter = 0;

class HubConnection implements FrontendConnection, Subscriber {
  readonly id = ++connectionCounter;
  readonly name: string;
  readonly interactive: boolean;
  readonly renders: RenderPreference;
  readonly verbose: boolean;
  readonly #queue = new AsyncQueue<ServerEvent>();
  readonly subscriptions = new Map<string, Subscription>();
  readonly #hub: FrontendHub;
  #chain: Promise<void> = Promise.resolve();

  constructor(hub: FrontendHub, options: ConnectOptions) {
    this.#hub = hub;
    this.name = options.name ?? `connection-${this.id}`;
    this.interactive = options.interactive ?? false;
    this.renders = options.renders ?? "producer";
    this.verbose = options.verbose ?? false;
  }

  get events(): AsyncIterable<ServerEvent> {
    return this.#queue;
  }

  get closed(): boolean {
    return this.#queue.ended;
  }

  deliver(event: ServerEvent): void {
    this.#queue.push(event);
  }

  send(init: ClientEventInit): void {
    if (this.#queue.ended) return;
    const event = create(ClientEventSchema, init);
    // One event at a time per connection: arrival order is processing order.
    this.#chain = this.#chain.then(() => this.#hub.handle(this, event));
  }

  close(): void {
    if (this.#queue.ended) return;
    for (const sub of this.subscriptions.values()) sub.session.channel.unsubscribe(this);
    this.subscriptions.clear();
    this.#queue.end();
    this.#hub.forget(this);
  }

  /** Resolves once every ClientEvent sent so far has been handled. */
  settled(): Promise<void> {
    return this.#chain;
  }
}

export class FrontendHub implements FrontendPort {
  readonly #service: SessionService;
  readonly #log: KernelLogger;
  readonly #connections = new Set<HubConnection>();

  constructor(service: SessionService, log: KernelLogger) {
    this.#service = service;
    this.#log = log;
  }

  connect(options: ConnectOptions = {}): FrontendConnection {
    const conn = new HubConnection(this, options);
    this.#connections.add(conn);
    return conn;
  }

  /** Ends every connection (kernel shutdown). */
  closeAll(): void {
    for (const c of [...this.#connections]) c.close();
  }

  /** @internal */
  forget(conn: HubConnection): void {
    this.#connections.delete(conn);
  }

  /** @internal Handles one ClientEvent of `conn`. */
  async handle(conn: HubConnection, event: ClientEvent): Promise<void> {
    if (conn.closed) return;
    try {
      await this.#dispatch(conn, event);
    } catch (err) {
      if (err instanceof FrontendRequestError) {
        this.#error(conn, event, err.category, err.message);
      } else {
        this.#log.error("client event failed", { error: (err as Error).message, connection: conn.name });
        this.#error(conn, event, FrontendErrorCategory.UNKNOWN, (err as Error).message);
      }
    }
  }

  async #dispatch(conn: HubConnection, event: ClientEvent): Promise<void> {
    const e = event.event;
    switch (e.case) {
      case "hello":
        return;
      case "createSession": {
        const req = e.value;
        const session = await this.#service.createSession({
          profile: req.profile,
          workingDirectory: req.workingDirectory,
          prompt: req.initialPrompt,
        });
        conn.subscriptions.set(session.id, { session, replayOnly: false, mayReopen: true });
        session.channel.subscribe(conn);
        this.#reply(conn, session.id, req.requestId, {
          case: "sessionCreated",
          value: { info: session.info() },
        });
        if (req.initialPrompt.length > 0) this.#service.startCreated(session, req.initialPrompt);
        return;
      }
      case "attachSession":
      case "resumeSession": {
        const req = e.value;
        const resume = e.case === "resumeSession";
        const session = await this.#service.openSession(req.sessionId, resume ? "resume" : "attach");
        const status = session.status();
        const replayOnly = resume
          ? REPLAY_ONLY_STATUSES.has(status) || session.control === undefined
          : status !== SessionStatus.RUNNING || session.control === undefined;
        const previous = conn.subscriptions.get(session.id);
        if (previous) previous.session.channel.unsubscribe(conn);
        conn.subscriptions.set(session.id, { session, replayOnly, mayReopen: resume && !replayOnly });
        const backfill = session.openBackfill();
        try {
          const registry = session.slashCommands();
          await session.channel.attach(conn, {
            requestId: req.requestId,
            opening: {
              event: {
                case: "sessionAttached",
                value: {
                  info: session.info(),
                  replayOnly,
                  ...(registry ? { slashCommandRegistry: registry } : {}),
                },
              },
            },
            backfill,
            live: () => (session.control && conn.interactive ? session.control.pendingRequests() : []),
          });
        } finally {
          backfill.close();
        }
        return;
      }
      case "detachSession": {
        const req = e.value;
        const sub = conn.subscriptions.get(req.sessionId);
        if (!sub) {
          // Known but not subscribed here: still a successful (idempotent) detach.
          await this.#service.openSession(req.sessionId, "attach");
        } else {
          sub.session.channel.unsubscribe(conn);
          conn.subscriptions.delete(req.sessionId);
        }
        this.#reply(conn, req.sessionId, req.requestId, { case: "sessionDetached", value: {} });
        return;
      }
      case "listSessions": {
        const req = e.value;
        const sessions = this.#service.listSessions({
          ...(req.status !== undefined ? { status: req.status } : {}),
          ...(req.parentSessionId !== undefined ? { parentSessionId: req.parentSessionId } : {}),
          rootsOnly: req.rootsOnly,
        });
        this.#reply(conn, "", req.requestId, { case: "sessionList", value: { sessions } });
        return;
      }
      case "userMessage":
      case "interrupt":
      case "planDecision":
      case "interactiveResponse":
      case "slashCommand":
      case "actionTrigger":
        return this.#sessionEvent(conn, event);
      default:
        throw new FrontendRequestError(
          FrontendErrorCategory.INVALID_CLIENT_EVENT,
          "the client event has no variant set",
        );
    }
  }

  #sessionEvent(conn: HubConnection, event: ClientEvent): void {
    if (!event.sessionId) {
      throw new FrontendRequestError(
        FrontendErrorCategory.INVALID_CLIENT_EVENT,
        `${event.event.case} needs session_id`,
      );
    }
    const sub = conn.subscriptions.get(event.sessionId);
    if (!sub) {
      throw new FrontendRequestError(
        FrontendErrorCategory.INVALID_CLIENT_EVENT,
        `this connection is not attached to session ${event.sessionId}`,
      );
    }
    const control = sub.session.control;
    const e = event.event;
    const fail = (err: FrontendErrorInit | undefined) => {
      if (err) throw new FrontendRequestError(err.category, err.message);
    };
    switch (e.case) {
      case "userMessage":
        if (sub.replayOnly || !control) throw replayOnlyError(sub.session);
        if (e.value.content.length === 0) {
          throw new FrontendRequestError(
            FrontendErrorCategory.INVALID_CLIENT_EVENT,
            "user_message has no content",
          );
        }
        fail(control.submit(e.value.content, { mayReopen: sub.mayReopen }));
        return;
      case "interrupt":
        control?.interrupt();
        return;
      case "planDecision":
        if (!control) throw replayOnlyError(sub.session);
        fail(control.decide(e.value));
        return;
      case "interactiveResponse":
        if (!control) throw replayOnlyError(sub.session);
        fail(control.respond(e.value));
        return;
      case "slashCommand": {
        if (sub.replayOnly || !control) throw replayOnlyError(sub.session);
        const registry = sub.session.slashCommands();
        const found = registry?.commands.find((c) => c.spec?.name === e.value.name);
        if (!found?.spec) {
          throw new FrontendRequestError(
            FrontendErrorCategory.INVALID_CLIENT_EVENT,
            `no slash command /${e.value.name} is registered for this session`,
          );
        }
        if (found.spec.dispatch === Dispatch.DIRECT_INVOKE) {
          fail(
            control.invoke(
              {
                provider: found.provider,
                toolName: found.spec.toolName ?? "",
                args: e.value.args,
                origin: { kind: "slash_command", name: found.spec.name, args: e.value.args },
              },
              { mayReopen: sub.mayReopen },
            ),
          );
          return;
        }
        if (found.spec.dispatch !== Dispatch.PROMPT_EXPANSION) {
          throw new FrontendRequestError(
            FrontendErrorCategory.INVALID_CLIENT_EVENT,
            `/${e.value.name} has no dispatch mode`,
          );
        }
        const textValue = expandTemplate(found.spec.template ?? "", e.value.args);
        fail(
          control.submit(
            [create(ContentBlockSchema, { block: { case: "text", value: { text: textValue } } })],
            {
              mayReopen: sub.mayReopen,
            },
          ),
        );
        return;
      }
      case "actionTrigger": {
        if (sub.replayOnly || !control) throw replayOnlyError(sub.session);
        const t = e.value;
        if (!t.provider || !t.toolName) {
          throw new FrontendRequestError(
            FrontendErrorCategory.INVALID_CLIENT_EVENT,
            "action_trigger needs provider and tool_name, echoed from the action node",
          );
        }
        // Only an action this session showed may be activated; the gate judges the rest.
        const refused = sub.session.channel.actions.refusal(t);
        if (refused) throw new FrontendRequestError(FrontendErrorCategory.INVALID_CLIENT_EVENT, refused);
        fail(
          control.invoke(
            {
              provider: t.provider,
              toolName: t.toolName,
              args: t.args ?? {},
              origin: { kind: "action_trigger", nodeId: t.nodeId },
            },
            { mayReopen: sub.mayReopen },
          ),
        );
        return;
      }
    }
  }

  #reply(
    conn: HubConnection,
    sessionId: string,
    requestId: string,
    event: MessageInitShape<typeof ServerEventSchema>["event"],
  ): void {
    conn.deliver(create(ServerEventSchema, { sessionId, requestId, event }));
  }

  #error(conn: HubConnection, event: ClientEvent, category: FrontendErrorCategory, message: string): void {
    const e = event.event;
    const requestId =
      e.case === "createSession" ||
      e.case === "attachSession" ||
      e.case === "resumeSession" ||
      e.case === "detachSession" ||
      e.case === "listSessions"
        ? e.value.requestId
        : undefined;
    const sessionId =
      e.case === "attachSession" || e.case === "resumeSession" || e.case === "detachSession"
        ? e.value.sessionId
        : event.sessionId;
    conn.deliver(
      create(ServerEventSchema, {
        sessionId,
        ...(requestId !== undefined ? { requestId } : {}),
        event: { case: "error", value: { error: { category, message } } },
      }),
    );
  }
}

function replayOnlyError(session: HubSession): FrontendRequestError {
  return new FrontendRequestError(
    FrontendErrorCategory.SESSION_REPLAY_ONLY,
    `session ${session.id} is attached replay-only (status ${SessionStatus[session.status()]?.toLowerCase() ?? "?"}); resume it to continue a completed or cancelled session`,
  );
}

/** "{arg}"-style substitution: {args} (and {arg}) is the whole argument text, {1}, {2} ... its words. */
export function expandTemplate(template: string, args: string): string {
  const words = args.trim().split(/\s+/).filter(Boolean);
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => {
    if (key === "args" || key === "arg") return args.trim();
    if (/^\d+$/.test(key)) return words[Number(key) - 1] ?? "";
    return whole;
  });
}

export type { ServerEventInit };
