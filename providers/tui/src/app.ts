// The terminal UI: a frontend on one FrontendConnection. It turns ServerEvents into
// scrollback and a small live region, and keys into ClientEvents. On a TTY it uses
// the differential Screen; anywhere else it degrades to plain, line-oriented text
// (streamed text written as it arrives, prompts answered one line at a time).

import type { JsonObject } from "@bufbuild/protobuf";
import {
  ClientDecision,
  FrontendErrorCategory,
  type ServerEvent,
  type ServerEvent_InteractiveRequest,
  StreamDeltaKind,
} from "@pluggableharness/protocol/frontend";
import { PlanDecisionScope, type PlanItem } from "@pluggableharness/protocol/plan";
import { type PlacedContent, Region, type RenderTree, TextStyle } from "@pluggableharness/protocol/render";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import type { SlashCommandRegistry } from "@pluggableharness/protocol/slashcommand";
import { ActionFocus } from "./actions.ts";
import {
  allCommands,
  type CommandEntry,
  completeCommand,
  isCommandEcho,
  parseCommand,
  registryEntries,
} from "./commands.ts";
import type { FrontendConnection } from "./connection.ts";
import { formatTokens, formatUsd, isTerminal, riskName, statusName } from "./describe.ts";
import { LineEditor } from "./editor.ts";
import { ESCAPE_TIMEOUT_MS, type Key, KeyDecoder } from "./keys.ts";
import { loadHighlighter, MarkdownStream, renderMarkdown } from "./markdown.ts";
import { attachmentText, completeMention, defaultProtectedPaths, readMentions } from "./mentions.ts";
import { optionLabels, pickedOption } from "./options.ts";
import { permissionAction } from "./permission.ts";
import { pick } from "./picker.ts";
import { actionsOf, paintNode, paintTree, treeText } from "./render-tree.ts";
import { Screen, type TerminalOutput } from "./screen.ts";
import { type Painter, painterFor, sanitize, sanitizeLines, visibleWidth, wrapLine } from "./style.ts";
import { originLabel, SubagentTree } from "./subagents.ts";

export interface TuiInput {
  on(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  removeListener(event: "data", listener: (chunk: Buffer | string) => void): unknown;
  removeListener(event: "end", listener: () => void): unknown;
  setEncoding?(encoding: BufferEncoding): unknown;
  setRawMode?(mode: boolean): unknown;
  resume?(): unknown;
  pause?(): unknown;
  readonly isTTY?: boolean;
}

export interface TuiOutput extends TerminalOutput {
  readonly isTTY?: boolean;
  on?(event: "resize", listener: () => void): unknown;
  removeListener?(event: "resize", listener: () => void): unknown;
}

export type SessionTarget =
  | { kind: "create"; profile?: string; workingDirectory?: string; prompt?: string }
  | {
      kind: "resume" | "attach";
      sessionId: string;
      /** A first message, sent once attached. */
      prompt?: string;
      /** The session was just created for this UI: no "resumed" banner. */
      fresh?: boolean;
      /** The serving model, when it is only known once the session exists. */
      model?: string;
    };

export interface TuiOptions {
  connection: FrontendConnection;
  input: TuiInput;
  output: TuiOutput;
  /**
   * The session to open. A promise when the UI is painted before the session exists: input
   * is taken at once, what is submitted meanwhile is queued (shown as such) and sent once
   * the session is attached; a rejection ends the UI, listing what was not sent.
   */
  session: SessionTarget | Promise<SessionTarget>;
  /** Shown in the status line until the first usage update names the serving model. */
  model?: string;
  env?: NodeJS.ProcessEnv;
  /** Force plain (non-TTY) rendering, e.g. for `TERM=dumb`. */
  plain?: boolean;
  now?: () => number;
  /** Earlier entries for ↑ and Ctrl-R, and where a new entry is kept. */
  history?: { entries: string[]; append?: (entry: string) => void };
  /** Where `@path` mentions are completed and read from (default: the process's directory). */
  workingDirectory?: string;
  /** The agent's own files, which `@path` never attaches (default: agent.hcl and .agent/ here). */
  protectedPaths?: readonly string[];
  /**
   * Leaving detaches only (`agent attach` to a served session): the session keeps
   * running, so exiting sends no interrupt.
   */
  detachOnExit?: boolean;
}

export interface TuiResult {
  sessionId: string | undefined;
  status: SessionStatus;
}

type StreamKind = "text" | "thinking" | "tool";

interface OpenStream {
  id: string;
  kind: StreamKind;
  text: string;
  /** Plain mode: how much of `text` has been written out already. */
  written: number;
  /** TTY, assistant text: the markdown view, finished blocks committed as they settle. */
  md?: MarkdownStream;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const DOUBLE_PRESS_MS = 2000;
const INTERRUPTING = "Interrupting…";
/** The busy line while the session is being created behind a painted prompt. */
export const STARTING = "Starting the agent";
export const TYPE_AHEAD = "type now: Enter queues the message";
const TOOL_TAIL = 8;
const PANEL_ROWS = 12;

/** Runs the UI until the operator exits or the connection ends. */
const collapseSpace = (s: string) => s.replace(/\s+/g, " ").trim();

export function runTui(options: TuiOptions): Promise<TuiResult> {
  return new Tui(options).run();
}

export class Tui {
  private readonly conn: FrontendConnection;
  private readonly input: TuiInput;
  private readonly output: TuiOutput;
  private target: SessionTarget;
  /** The session is still being created (the UI was painted first). */
  private pendingTarget: Promise<SessionTarget> | undefined;
  private fresh: boolean;
  private readonly cwd: string;
  private readonly protectedPaths: readonly string[];
  /** Sessions this UI detached from (/clear, /resume): their late events are dropped. */
  private readonly left = new Set<string>();
  private readonly detachOnExit: boolean;
  private readonly plain: boolean;
  private readonly p: Painter;
  private readonly screen: Screen | undefined;
  private readonly keys = new KeyDecoder();
  private readonly editor: LineEditor;
  private escapeTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  private sessionId: string | undefined;
  private info: SessionInfo | undefined;
  private status = SessionStatus.UNSPECIFIED;
  private replayOnly = false;
  private busy = false;
  private busySince = 0;
  private busyLabel = "Working";
  private readonly streams = new Map<string, OpenStream>();
  private lastThinking = "";
  private readonly toolLabels = new Map<string, string>();
  private readonly permissions: PlanItem[] = [];
  /** Sub-agents of the attached session (subagents.ts), and who asked each permission. */
  private readonly subagents = new SubagentTree();
  private readonly askedBy = new Map<string, string>();
  private readonly questions: ServerEvent_InteractiveRequest[] = [];
  private readonly overlay: string[] = [];
  private editing: PlanItem | undefined;
  /** The operator is typing why the first permission is denied. */
  private denying: PlanItem | undefined;
  private model: string;
  private inputTokens = 0;
  private outputTokens = 0;
  private costUsd = 0;
  /** The last request's size against its model's window (usage updates carry both). */
  private context: { tokens: number; ceiling: number } | undefined;
  private remainingUsd: number | undefined;
  private warning = "";
  /** What a status widget (REGION_INPUT_BAR) shows; replaces the UI's own status bar. */
  private widgetStatus = "";
  /** What widgets put in REGION_SIDEBAR (the task list), drawn above the input. */
  private panel: string[] = [];
  /** The trees behind `panel`, repainted when the focused action moves. */
  private panelTrees: RenderTree[] = [];
  /** Actions on screen the keyboard can reach (Ctrl-T). */
  private readonly actions = new ActionFocus();
  private hint = "";
  private hintUntil = 0;
  /** Repaints once a flashed hint expires, so that it never outlives its moment. */
  private hintTimer: NodeJS.Timeout | undefined;
  /** The session is attached and its history shown: input can go to it. */
  private ready = false;
  private wasReady = false;
  /** Lines entered before the session was ready, sent once it is. */
  private readonly typedAhead: string[] = [];
  /** The plain text of the last transcript unit, with white space collapsed. */
  private lastUnitText = "";
  private ctrlCAt = -Infinity;
  private spinnerTimer: NodeJS.Timeout | undefined;
  private finished = false;
  private resolveRun!: (r: TuiResult) => void;
  private registered: CommandEntry[] = [];
  /** A slash command was sent and nothing has answered it yet. */
  private awaitingCommand = false;
  /** The kernel sent the session's command registry (else the kernel is asked and answers). */
  private registryKnown = false;
  // Plain mode: queued input lines, and whether a partial line is open on stdout.
  private readonly lines: string[] = [];
  private inputEnded = false;
  private partial = "";
  private lineOpen = false;
  private prompted = "";

  constructor(options: TuiOptions) {
    this.conn = options.connection;
    this.input = options.input;
    this.output = options.output;
    if (options.session instanceof Promise) {
      this.pendingTarget = options.session;
      // Replaced before anything is sent: nothing reads it while the session is pending.
      this.target = { kind: "create" };
      this.fresh = true;
    } else {
      this.target = options.session;
      this.fresh = options.session.kind !== "create" && !!options.session.fresh;
    }
    this.cwd = options.workingDirectory ?? process.cwd();
    this.protectedPaths = options.protectedPaths ?? defaultProtectedPaths(this.cwd);
    this.detachOnExit = !!options.detachOnExit;
    this.now = options.now ?? Date.now;
    const env = options.env ?? process.env;
    const tty = !options.plain && !!options.output.isTTY && !!options.input.isTTY && env["TERM"] !== "dumb";
    this.plain = !tty;
    this.p = painterFor(tty, env);
    this.screen = tty ? new Screen(options.output) : undefined;
    this.model = options.model ?? "";
    this.editor = new LineEditor(options.history?.entries ?? [], options.history?.append);
  }

  run(): Promise<TuiResult> {
    const done = new Promise<TuiResult>((resolve) => {
      this.resolveRun = resolve;
    });
    this.attachInput();
    this.start();
    void this.pump();
    this.render();
    return done;
  }

  /** What the caller is doing while the session is being created (e.g. installing plugins). */
  progress(label: string): void {
    if (this.finished || !this.pendingTarget) return;
    this.busyLabel = label;
    this.render();
  }

  /** A line from the caller (a start-up warning), written into the transcript. */
  notice(text: string): void {
    if (this.finished) return;
    this.commit([this.p.paint(sanitize(text), "warning")]);
    this.render();
  }

  /** The operator left (or the UI ended) before the session was created. */
  get done(): boolean {
    return this.finished;
  }

  // ---- session start -------------------------------------------------------

  private start(): void {
    const pending = this.pendingTarget;
    if (pending) {
      this.setBusy(STARTING, true);
      pending.then(
        (t) => {
          this.pendingTarget = undefined;
          if (this.finished) return;
          this.target = t;
          this.fresh = t.kind !== "create" && !!t.fresh;
          if (t.kind !== "create" && t.model) this.model = t.model;
          this.start();
          this.render();
        },
        () => {
          this.pendingTarget = undefined;
          // The caller reports why; what was queued is shown so that none of it is lost.
          const lines = this.typedAhead.splice(0);
          if (this.editor.text.trim()) lines.push(this.editor.text);
          if (lines.length > 0)
            this.commit(lines.map((l) => this.p.paint(`Not sent: ${sanitize(l)}`, "warning")));
          this.finish();
        },
      );
      return;
    }
    const t = this.target;
    if (t.kind === "create") {
      this.setBusy("Starting", true);
      this.conn.send({
        event: {
          case: "createSession",
          value: {
            requestId: "create",
            profile: t.profile ?? "",
            workingDirectory: t.workingDirectory ?? "",
            initialPrompt: t.prompt ? [{ block: { case: "text", value: { text: t.prompt } } }] : [],
          },
        },
      });
    } else {
      this.setBusy("Loading session", true);
      this.conn.send({
        event: {
          case: t.kind === "resume" ? "resumeSession" : "attachSession",
          value: { requestId: t.kind, sessionId: t.sessionId },
        },
      });
    }
  }

  private async pump(): Promise<void> {
    try {
      for await (const ev of this.conn.events) {
        if (this.finished) break;
        try {
          this.onEvent(ev);
        } catch (err) {
          // One bad event must not take the terminal down (render_failed: fall back, carry on).
          this.commit([this.p.paint(`[could not show an event: ${(err as Error).message}]`, "error")]);
        }
        this.render();
      }
    } catch (err) {
      this.commit([this.p.paint(`Connection failed: ${(err as Error).message}`, "error")]);
    }
    this.finish();
  }

  // ---- server events -------------------------------------------------------

  private onEvent(ev: ServerEvent): void {
    const e = ev.event;
    if (ev.sessionId && this.left.has(ev.sessionId)) return;
    if (e.case === "sessionList" && ev.requestId?.startsWith("resume-list")) {
      const prefix = ev.requestId.slice("resume-list:".length);
      if (prefix) this.resumePrefix(prefix, e.value.sessions);
      else void this.resumePicker(e.value.sessions);
      return;
    }
    if (e.case !== "error" && e.case !== "slashCommandRegistry") this.awaitingCommand = false;
    switch (e.case) {
      case "sessionCreated":
        this.sessionId = ev.sessionId || e.value.info?.sessionId;
        this.info = e.value.info;
        this.status = e.value.info?.status ?? SessionStatus.RUNNING;
        this.commit([
          this.p.paint(
            `Session ${this.sessionId ?? "?"}${this.info?.profile ? ` · profile ${this.info.profile}` : ""}`,
            "dim",
          ),
        ]);
        if (this.target.kind === "create" && this.target.prompt) this.setBusy("Thinking", true);
        else this.setBusy("", false);
        this.becomeReady();
        return;
      case "sessionAttached":
        this.sessionId = ev.sessionId || e.value.info?.sessionId;
        this.info = e.value.info;
        this.status = e.value.info?.status ?? SessionStatus.UNSPECIFIED;
        this.replayOnly = e.value.replayOnly;
        if (e.value.slashCommandRegistry) this.setSlash(e.value.slashCommandRegistry);
        this.commit([
          this.p.paint(
            this.fresh
              ? `Session ${this.sessionId ?? "?"}${this.info?.profile ? ` · profile ${this.info.profile}` : ""} · /help for keys`
              : `Session ${this.sessionId ?? "?"} · ${statusName(this.status)}${this.replayOnly ? " · replay only" : ""}`,
            "dim",
          ),
        ]);
        return;
      case "backfillComplete": {
        if (!this.fresh) this.commit([this.p.paint("── end of history ──", "dim")]);
        this.setBusy("", false);
        const t = this.target;
        if (t.kind !== "create" && t.prompt) this.sendMessage(t.prompt);
        else this.takeLine();
        this.becomeReady();
        return;
      }
      case "slashCommandRegistry":
        this.setSlash(e.value);
        return;
      case "sessionRewound": {
        // The operator rewound this session (/rewind, here or in another frontend): go on
        // in the fork, with the prompt it ends before back in the editor to send or change.
        const fork = e.value.forkSessionId;
        if (!fork || fork === this.sessionId) return;
        this.commit([this.p.paint(`Rewound: continuing in ${sanitize(fork)}.`, "dim")]);
        this.switchSession({ kind: "resume", sessionId: fork });
        if (e.value.promptText) this.editor.set(e.value.promptText);
        return;
      }
      case "streamDelta": {
        const kind: StreamKind =
          e.value.kind === StreamDeltaKind.THINKING
            ? "thinking"
            : e.value.kind === StreamDeltaKind.TOOL_OUTPUT
              ? "tool"
              : "text";
        this.delta(e.value.targetId, kind, e.value.text);
        return;
      }
      case "render":
        if (e.value.content) this.onRender(e.value.content);
        return;
      case "planReady": {
        this.closeStreams(false, ["text", "thinking"]);
        for (const item of e.value.plan?.items ?? []) {
          this.toolLabels.set(item.toolCallId, `${item.provider}.${item.toolName}`);
        }
        this.setBusy("Applying", true);
        return;
      }
      case "permissionRequest":
        if (e.value.planItem) {
          this.closeStreams(false, ["text", "thinking"]);
          this.permissions.push(e.value.planItem);
          const who = originLabel(e.value.origin);
          if (who) this.askedBy.set(e.value.planItem.id, who);
          if (!this.plain) this.output.write("\x07");
        }
        return;
      case "requestResolved":
        this.withdraw(e.value);
        return;
      case "interactiveRequest":
        this.closeStreams(false, ["text", "thinking"]);
        this.questions.push(e.value);
        if (this.questions.length === 1) this.editor.clear();
        return;
      case "usageUpdate": {
        const u = e.value;
        this.inputTokens += Number(u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens);
        this.outputTokens += Number(u.outputTokens);
        this.costUsd = u.sessionCostUsd;
        this.remainingUsd = u.remainingCostBudgetUsd;
        if (u.contextTokens !== undefined && u.contextCeiling !== undefined && u.contextCeiling > 0n)
          this.context = { tokens: Number(u.contextTokens), ceiling: Number(u.contextCeiling) };
        if (u.modelId) this.model = u.providerName ? `${u.providerName}/${u.modelId}` : u.modelId;
        // A call went through: a rate-limit or overload notice is over.
        this.warning = "";
        return;
      }
      case "sessionStatusUpdate": {
        const s = e.value.status;
        this.status = s;
        if (isTerminal(s) || s === SessionStatus.RUNNING) {
          // A terminal status ends the current turn; RUNNING after RUNNING is the
          // kernel saying the turn ended and the session waits for input.
          if (isTerminal(s) || e.value.previousStatus === SessionStatus.RUNNING) {
            this.closeStreams(false);
            this.clearPrompts();
            this.setBusy("", false);
            this.commit([this.statusLine(s, e.value.detail)]);
            this.takeLine();
          }
        }
        return;
      }
      case "sessionTreeUpdate": {
        const line = this.subagents.changeLine(this.subagents.update(e.value), this.p);
        if (line) this.commit([line]);
        else this.render();
        return;
      }
      case "error": {
        const err = e.value.error;
        const name = err ? (FrontendErrorCategory[err.category]?.toLowerCase() ?? "unknown") : "unknown";
        this.commit([this.p.paint(`✗ ${name}: ${sanitize(err?.message ?? "")}`, "error")]);
        if (this.awaitingCommand) {
          // The command was refused: nothing is running, so nothing to wait for.
          this.awaitingCommand = false;
          this.setBusy("", false);
          return;
        }
        if (ev.requestId === "create" || ev.requestId === "resume" || ev.requestId === "attach") {
          this.setBusy("", false);
          if (!this.sessionId) this.finish();
        }
        return;
      }
      default:
        return;
    }
  }

  private setSlash(registry: SlashCommandRegistry): void {
    this.registryKnown = true;
    this.registered = registryEntries(registry);
  }

  private statusLine(s: SessionStatus, detail: string): string {
    // A failed turn's record (rendered just before) already says why: once is enough.
    const told = detail !== "" && this.lastUnitText.includes(collapseSpace(sanitize(detail)));
    const suffix = detail && detail !== "interrupted" && !told ? ` — ${sanitize(detail)}` : "";
    switch (s) {
      case SessionStatus.COMPLETED:
        return this.p.paint(`✓ done${suffix}`, "success");
      case SessionStatus.RUNNING:
        return this.p.paint(`✓ turn finished${suffix}`, "success");
      case SessionStatus.CANCELLED:
        return this.p.paint(`■ interrupted${suffix}`, "warning");
      case SessionStatus.ERROR_MAX_TURNS:
        return this.p.paint(`⚠ stopped: turn limit reached${suffix}`, "warning");
      case SessionStatus.ERROR_MAX_BUDGET_USD:
        return this.p.paint(`⚠ stopped: cost budget reached${suffix}`, "warning");
      case SessionStatus.ERROR_MAX_WALL_CLOCK:
        return this.p.paint(`⚠ stopped: time limit reached${suffix}`, "warning");
      case SessionStatus.FAILED:
        return this.p.paint(`✗ failed${suffix}`, "error");
      default:
        return this.p.paint(`${statusName(s)}${suffix}`, "dim");
    }
  }

  private onRender(content: PlacedContent): void {
    if (isCommandEcho(content, this.registered)) return;
    const lines = paintTree(content.content, { painter: this.p });
    switch (content.region) {
      case Region.TOP_BAR:
      case Region.HOTKEY_HINTS:
        this.warning = sanitize(lines.join(" ").trim());
        return;
      case Region.INPUT_BAR:
        // A status widget: its line takes the place of the UI's own status bar.
        this.widgetStatus = sanitize(lines.join(" ").trim());
        return;
      case Region.SIDEBAR:
        // A terminal has no sidebar: the panel is drawn above the input, bounded.
        if (content.content) {
          this.panelTrees = content.replace
            ? [content.content]
            : [...this.panelTrees, content.content].slice(-PANEL_ROWS);
        } else if (content.replace) this.panelTrees = [];
        this.actions.setPanel(this.panelTrees.flatMap((t) => actionsOf(t.root)));
        this.paintPanel();
        return;
      case Region.OVERLAY:
        if (this.permissions.length > 0 || this.questions.length > 0) {
          if (content.replace) this.overlay.length = 0;
          this.overlay.push(...lines);
          return;
        }
        this.closeStreams(true);
        this.commit(lines.map((l) => `${this.p.paint("┃", "warning")} ${l}`));
        this.actions.shown(actionsOf(content.content?.root));
        return;
      default: {
        // A finished unit: it supersedes whatever was streamed for it.
        const streamed = this.closeStreams(true);
        this.lastUnitText = collapseSpace(treeText(content.content));
        const message = this.assistantMessage(content);
        // The streamed answer is already on screen, as markdown.
        if (streamed && message) return;
        this.commit(["", ...(message ?? lines)]);
        this.actions.shown(actionsOf(content.content?.root));
      }
    }
  }

  /** The panel's lines, with the focused action marked. */
  private paintPanel(): void {
    const focus = this.actions.current?.id;
    const lines = this.panelTrees.flatMap((t) =>
      paintTree(t, { painter: this.p, ...(focus !== undefined ? { focus } : {}) }),
    );
    this.panel = lines.slice(-PANEL_ROWS);
  }

  /** Keys while an action has focus; true when the key was used. */
  private actionKey(key: Key): boolean {
    if (!this.actions.active) return false;
    switch (key.name) {
      case "tab":
      case "down":
      case "right":
        this.actions.move(1);
        break;
      case "backtab":
      case "up":
      case "left":
        this.actions.move(-1);
        break;
      case "enter":
        this.activate();
        break;
      case "escape":
      case "ctrl-t":
        this.actions.clear();
        break;
      default:
        // Anything else leaves the actions and goes where it would have gone.
        this.actions.clear();
        this.paintPanel();
        return false;
    }
    this.paintPanel();
    return true;
  }

  /** Sends the focused action to the kernel, which checks and runs it like /command. */
  private activate(): void {
    const a = this.actions.current;
    this.actions.clear();
    if (!a || !this.sessionId) return;
    if (this.replayOnly) {
      this.flash("This session is replay only: its actions cannot run");
      return;
    }
    this.conn.send({
      sessionId: this.sessionId,
      event: {
        case: "actionTrigger",
        value: {
          nodeId: a.id,
          toolName: a.toolName,
          provider: a.provider,
          ...(a.args ? { args: a.args } : {}),
        },
      },
    });
    this.flash(`Running ${sanitize(a.label || a.toolName)} (${sanitize(`${a.provider}.${a.toolName}`)})…`);
  }

  /**
   * An assistant message's render (the kernel's renderer: a group headed by bold
   * "Assistant") painted with its prose as markdown, as it looked while it streamed;
   * undefined for anything else, whose text is shown verbatim.
   */
  private assistantMessage(content: PlacedContent): string[] | undefined {
    if (this.plain) return undefined;
    const root = content.content?.root?.node;
    if (root?.case !== "group") return undefined;
    const [head, ...rest] = root.value.children;
    const h = head?.node;
    if (h?.case !== "text" || h.value.style !== TextStyle.BOLD || !h.value.content.startsWith("Assistant"))
      return undefined;
    const width = this.screen!.width;
    const out = [this.p.paint(sanitize(h.value.content), "bold")];
    for (const child of rest) {
      const n = child.node;
      if (n.case === "text" && n.value.style === TextStyle.UNSPECIFIED)
        out.push(...renderMarkdown(n.value.content, width, this.p));
      else out.push(...paintNode(child, { painter: this.p }));
    }
    return out;
  }

  // ---- streams -------------------------------------------------------------

  private delta(id: string, kind: StreamKind, text: string): void {
    let s = this.streams.get(id);
    if (!s) {
      if (kind === "text") this.closeStreams(false, ["thinking"]);
      s = { id, kind, text: "", written: 0 };
      this.streams.set(id, s);
      if (kind === "tool" && this.plain)
        this.writePlain(`${this.p.paint(`  ${this.toolLabels.get(id) ?? "tool"} output:`, "dim")}\n`);
    }
    s.text += text.replace(/\r\n/g, "\n");
    if (kind === "text" && !this.plain) {
      if (!s.md) {
        s.md = new MarkdownStream();
        this.commit(["", this.p.paint("Assistant", "bold")]);
      }
      s.md.append(text);
      const settled = s.md.takeSettled(this.screen!.width, this.p);
      if (settled.length > 0) this.commit(settled);
    }
    this.setBusy(
      kind === "thinking"
        ? "Thinking"
        : kind === "tool"
          ? `Running ${this.toolLabels.get(id) ?? "tool"}`
          : "Writing",
      true,
    );
    if (this.plain) this.streamPlain(s);
  }

  /**
   * Ends open streams. `superseded`: a finished render replaces their text, so text
   * and tool output are dropped; otherwise their text is committed as it stands.
   */
  private closeStreams(superseded: boolean, kinds?: StreamKind[]): boolean {
    let shownText = false;
    for (const s of [...this.streams.values()]) {
      if (kinds && !kinds.includes(s.kind)) continue;
      this.streams.delete(s.id);
      if (s.kind === "thinking") {
        this.lastThinking = s.text;
        const n = s.text.trimEnd().split("\n").length;
        this.commit([
          this.p.paint(
            `▸ Thought for ${n} line${n === 1 ? "" : "s"}${this.plain ? "" : " (Ctrl-O shows it)"}`,
            "dim",
          ),
        ]);
        continue;
      }
      if (this.plain) {
        // Plain output already printed the text as it arrived.
        this.endPlainLine();
        continue;
      }
      if (s.md) {
        // Markdown was committed block by block; its last block goes now, superseded or
        // not (the message's render would repeat what is already on screen).
        const rest = s.md.finish(this.screen!.width, this.p);
        if (rest.length > 0) this.commit(rest);
        shownText = true;
        continue;
      }
      if (superseded) continue;
      if (s.kind === "tool") {
        const tail = s.text.trimEnd().split("\n").slice(-20);
        this.commit(tail.map((l) => this.p.paint(`  │ ${sanitize(l)}`, "dim")));
      } else if (s.text.trim() !== "") {
        this.commit(
          s.text
            .trimEnd()
            .split("\n")
            .map((l) => sanitize(l)),
        );
      }
    }
    return shownText;
  }

  // ---- prompts -------------------------------------------------------------

  /** A request settled elsewhere (another frontend answered first, or an interrupt): withdraw it. */
  private withdraw(r: {
    planItemId: string;
    callId: string;
    resolvedBy: string;
    decision: ClientDecision;
  }): void {
    const pi = r.planItemId ? this.permissions.findIndex((p) => p.id === r.planItemId) : -1;
    const qi = r.callId ? this.questions.findIndex((q) => q.callId === r.callId) : -1;
    if (pi < 0 && qi < 0) return; // answered here: already gone
    const what =
      pi >= 0
        ? `${this.permissions[pi]!.provider}.${this.permissions[pi]!.toolName}`
        : this.questions[qi]!.toolName;
    if (pi >= 0) {
      if (pi === 0) {
        this.overlay.length = 0;
        this.editing = undefined;
        this.denying = undefined;
      }
      this.permissions.splice(pi, 1);
    } else {
      if (qi === 0) this.overlay.length = 0;
      this.questions.splice(qi, 1);
    }
    const verdict =
      r.decision === ClientDecision.ALLOW
        ? "allowed"
        : r.decision === ClientDecision.DENY
          ? "denied"
          : "settled";
    this.commit([this.p.paint(`${what} was ${verdict} elsewhere (${sanitize(r.resolvedBy)})`, "dim")]);
    this.prompted = "";
    this.takeLine();
  }

  private clearPrompts(): void {
    this.permissions.length = 0;
    this.questions.length = 0;
    this.overlay.length = 0;
    this.editing = undefined;
    this.denying = undefined;
  }

  private decide(
    item: PlanItem,
    decision: ClientDecision,
    scope: PlanDecisionScope,
    corrected?: JsonObject,
    reason?: string,
  ): void {
    this.permissions.shift();
    this.overlay.length = 0;
    this.editing = undefined;
    this.denying = undefined;
    this.conn.send({
      sessionId: this.sessionId ?? "",
      event: {
        case: "planDecision",
        value: {
          planItemId: item.id,
          decision,
          scope,
          ...(corrected ? { correctedInput: corrected } : {}),
          ...(reason ? { reason } : {}),
        },
      },
    });
    const verb =
      decision === ClientDecision.ALLOW
        ? corrected
          ? "allowed with edited arguments"
          : "allowed"
        : reason
          ? `denied: ${sanitize(reason)}`
          : "denied";
    const scopeText =
      scope === PlanDecisionScope.ONCE
        ? ""
        : ` for ${scope === PlanDecisionScope.SESSION ? "this session" : "always"}${item.rememberScope ? ` (${sanitize(item.rememberScope)})` : ""}`;
    this.commit([
      this.p.paint(
        `  ${decision === ClientDecision.ALLOW ? "✓" : "✗"} ${item.provider}.${item.toolName} ${verb}${scopeText}`,
        decision === ClientDecision.ALLOW ? "success" : "warning",
      ),
    ]);
    this.editor.clear();
    this.setBusy("Applying", true);
  }

  private answer(q: ServerEvent_InteractiveRequest, text: string): void {
    this.questions.shift();
    this.overlay.length = 0;
    const field = answerField(q);
    // "2" picks the second listed option, when the answer schema takes an option index.
    const picked = pickedOption(text, optionLabels(q.prompt));
    const indexed = q.responseSchema?.properties.some((p) => p.name === "option_index");
    const response =
      picked && indexed ? { [field]: picked.label, option_index: picked.index } : { [field]: text };
    this.conn.send({
      sessionId: this.sessionId ?? "",
      event: {
        case: "interactiveResponse",
        value: { callId: q.callId, response },
      },
    });
    this.commit([
      this.p.paint(`  ↳ ${picked && indexed ? `${picked.index + 1}. ${picked.label}` : text}`, "dim"),
    ]);
    this.editor.clear();
    this.setBusy("Working", true);
  }

  // ---- input ---------------------------------------------------------------

  private readonly onData = (chunk: Buffer | string) => {
    const text = typeof chunk === "string" ? chunk : chunk.toString("utf8");
    if (this.plain) {
      this.partial += text;
      const parts = this.partial.split(/\r?\n/);
      this.partial = parts.pop() ?? "";
      this.lines.push(...parts);
      this.takeLine();
    } else {
      if (this.escapeTimer) clearTimeout(this.escapeTimer);
      this.escapeTimer = undefined;
      // Typed while `agent` was starting, the terminal was still in line mode and turned
      // each Enter into a line feed: until the session is ready, a line feed is Enter.
      const keys = this.wasReady ? text : text.replace(/\r?\n/g, "\r");
      for (const key of this.keys.decode(keys)) this.onKey(key);
      // An ESC at the end of a read may begin a sequence the next read completes.
      if (this.keys.pending) {
        this.escapeTimer = setTimeout(() => {
          this.escapeTimer = undefined;
          for (const key of this.keys.flush()) this.onKey(key);
          this.render();
        }, ESCAPE_TIMEOUT_MS);
        this.escapeTimer.unref?.();
      }
    }
    this.render();
  };

  private readonly onEnd = () => {
    this.inputEnded = true;
    if (this.partial) {
      this.lines.push(this.partial);
      this.partial = "";
    }
    this.takeLine();
    this.render();
  };

  private readonly onResize = () => {
    this.screen?.invalidate();
    this.render();
  };

  private attachInput(): void {
    if (!this.plain) {
      this.input.setRawMode?.(true);
      this.output.write("\x1b[?2004h"); // bracketed paste
      this.output.on?.("resize", this.onResize);
    }
    this.input.setEncoding?.("utf8");
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.resume?.();
  }

  private detachInput(): void {
    if (this.escapeTimer) clearTimeout(this.escapeTimer);
    this.input.removeListener("data", this.onData);
    this.input.removeListener("end", this.onEnd);
    if (!this.plain) {
      this.output.removeListener?.("resize", this.onResize);
      this.output.write("\x1b[?2004l");
      this.input.setRawMode?.(false);
    }
    this.input.pause?.();
  }

  private onKey(key: Key): void {
    if (key.name === "ctrl-c") {
      const now = this.now();
      if (now - this.ctrlCAt < DOUBLE_PRESS_MS) {
        this.exit();
        return;
      }
      this.ctrlCAt = now;
      // Attached to a served session, Ctrl-C only ever leaves; Esc is what interrupts.
      if (this.busy && !this.detachOnExit) this.interrupt();
      // Still starting: Ctrl-C cancels what was queued, as it would stop a running turn.
      if (!this.ready) this.typedAhead.length = 0;
      this.editor.clear();
      this.flash(
        this.detachOnExit
          ? "Press Ctrl-C again to detach (the session keeps running; Esc interrupts it)"
          : "Press Ctrl-C again to exit",
      );
      return;
    }
    if (this.editor.search) {
      // Ctrl-R search takes every key until it is accepted (Enter, a motion) or left (Esc).
      this.editor.apply(key);
      return;
    }
    if (this.actionKey(key)) return;
    if (key.name === "ctrl-t") {
      if (this.actions.start()) this.paintPanel();
      else this.flash("No actions on screen");
      return;
    }
    if (key.name === "escape") {
      if (this.editing || this.denying) {
        this.editing = undefined;
        this.denying = undefined;
        this.editor.clear();
        return;
      }
      if (!this.ready && this.typedAhead.length > 0) {
        // Still starting: the queued messages come back into the editor, unsent.
        const back = this.typedAhead.splice(0);
        if (this.editor.text) back.push(this.editor.text);
        this.editor.set(back.join("\n"));
        this.flash("Not queued any more: back in the editor");
        return;
      }
      if (this.busy || this.permissions.length > 0 || this.questions.length > 0) this.interrupt();
      else this.editor.clear();
      return;
    }
    if (key.name === "ctrl-o") {
      if (this.lastThinking)
        this.commit(
          this.lastThinking
            .trimEnd()
            .split("\n")
            .map((l) => this.p.paint(`  ${sanitize(l)}`, "dim", "italic")),
        );
      return;
    }
    if (key.name === "ctrl-l") {
      this.screen?.invalidate();
      return;
    }
    const item = this.permissions[0];
    if (item && !this.editing && !this.denying) {
      if (key.name === "text") this.permissionKey(item, key.text);
      return;
    }
    if (key.name === "ctrl-d" && this.editor.text === "" && !item && this.questions.length === 0) {
      this.exit();
      return;
    }
    if (key.name === "tab" && !item && this.questions.length === 0) {
      this.complete();
      return;
    }
    if (key.name === "enter") {
      if (this.editor.continueLine()) return;
      this.submit(this.editor.text);
      return;
    }
    this.editor.apply(key);
  }

  private permissionKey(item: PlanItem, text: string): void {
    const k = text[0];
    if (item.rememberUnavailable && (k === "s" || k === "A" || k === "N" || k === "D")) {
      // The kernel would refuse to remember it; the prompt stays.
      this.flash("This call can only be answered once: y to allow, n to deny");
      return;
    }
    if (k === "y" || k === "a") this.decide(item, ClientDecision.ALLOW, PlanDecisionScope.ONCE);
    else if (k === "s") this.decide(item, ClientDecision.ALLOW, PlanDecisionScope.SESSION);
    else if (k === "A") this.decide(item, ClientDecision.ALLOW, PlanDecisionScope.ALWAYS);
    else if (k === "n" || k === "d") this.decide(item, ClientDecision.DENY, PlanDecisionScope.ONCE);
    else if (k === "N" || k === "D") this.decide(item, ClientDecision.DENY, PlanDecisionScope.SESSION);
    else if (k === "r") {
      this.denying = item;
      this.editor.clear();
    } else if (k === "e") {
      this.editing = item;
      this.editor.set(JSON.stringify(item.input ?? {}));
    }
  }

  /** Tab: a command name after a leading `/`, else the `@path` the cursor ends. */
  private complete(): void {
    const { text, cursor } = this.editor;
    const head = /^\/(\S*)$/.exec(text.slice(0, cursor));
    if (head && !text.slice(0, cursor).includes("\n")) {
      const names = completeCommand(head[1]!, allCommands(this.registered));
      if (names.length === 1) {
        this.editor.set(`/${names[0]} `);
        if (text.length > cursor) this.editor.text += text.slice(cursor);
      } else if (names.length > 1) this.flash(names.map((n) => `/${n}`).join("  "));
      return;
    }
    const done = completeMention(text, cursor, this.cwd);
    if (!done) return;
    this.editor.text = done.text;
    this.editor.cursor = done.cursor;
    if (done.choices.length > 0) this.flash(done.choices.slice(0, 30).join("  "));
    else if (done.text === text) this.flash("No matching file");
  }

  /** Enter: the line goes to whatever is asking (argument edit, question) or becomes a message. */
  /** Input may go to the session now; what was typed ahead goes first, in order. */
  private becomeReady(): void {
    this.ready = true;
    this.wasReady = true;
    for (const line of this.typedAhead.splice(0)) this.submit(line);
    this.loadHighlighterWhenIdle();
  }

  private submit(line: string): void {
    if (this.denying) {
      this.decide(this.denying, ClientDecision.DENY, PlanDecisionScope.ONCE, undefined, line.trim());
      return;
    }
    if (this.editing) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch (err) {
        this.flash(`Not valid JSON: ${(err as Error).message}`);
        return;
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        this.flash("The arguments must be a JSON object");
        return;
      }
      this.decide(this.editing, ClientDecision.ALLOW, PlanDecisionScope.ONCE, parsed as JsonObject);
      return;
    }
    const q = this.questions[0];
    if (q) {
      this.answer(q, line);
      return;
    }
    const text = line.trim();
    if (text === "") return;
    this.editor.remember(text);
    this.editor.clear();
    const cmd = parseCommand(text);
    if (cmd && (cmd.name === "exit" || cmd.name === "quit")) {
      this.exit();
      return;
    }
    const registered = cmd ? this.registered.find((c) => c.name === cmd.name) : undefined;
    if (cmd && !registered && cmd.name === "help") {
      this.commit(this.helpLines());
      return;
    }
    if (!this.sessionId || !this.ready) {
      this.typedAhead.push(text);
      this.flash("Queued: sent once the session is ready (Esc takes it back)");
      return;
    }
    if (cmd && !registered) {
      if (cmd.name === "cost") {
        this.commit(this.costLines());
        return;
      }
      if (cmd.name === "clear") {
        this.switchSession({
          kind: "create",
          ...(this.info?.profile ? { profile: this.info.profile } : {}),
          ...(this.info?.workingDirectory ? { workingDirectory: this.info.workingDirectory } : {}),
        });
        return;
      }
      if (cmd.name === "resume") {
        // A prefix is resolved against the kernel's list, like `agent run --resume`.
        const requestId = cmd.args ? `resume-list:${cmd.args}` : "resume-list";
        this.conn.send({ event: { case: "listSessions", value: { requestId, rootsOnly: true } } });
        return;
      }
      if (this.registryKnown) {
        // Answered here: the kernel has no such command, and no turn starts.
        const near = suggest(
          cmd.name,
          allCommands(this.registered).map((c) => c.name),
        );
        this.commit([
          this.p.paint(
            `Unknown command /${sanitize(cmd.name)}.${near.length > 0 ? ` Did you mean ${near.map((n) => `/${n}`).join(", ")}?` : ""} /help lists the commands.`,
            "warning",
          ),
        ]);
        return;
      }
    }
    if (cmd) {
      this.awaitingCommand = true;
      this.conn.send({
        sessionId: this.sessionId,
        event: { case: "slashCommand", value: { name: cmd.name, args: cmd.args } },
      });
      this.setBusy(registered?.expands ? "Thinking" : `Running /${cmd.name}`, true);
    } else {
      this.sendMessage(text.startsWith("//") ? text.slice(1) : text);
    }
  }

  /**
   * A new user message; the kernel's render of it shows it in the transcript. Files it
   * mentions (`@path`) go with it; a mention that cannot be attached keeps the message
   * in the editor and says why.
   */
  private sendMessage(text: string): void {
    if (!this.sessionId) return;
    const read = readMentions(text, this.cwd, this.protectedPaths);
    if (!read.ok) {
      this.editor.set(text);
      this.commit([this.p.paint(`✗ ${read.error}. Nothing was sent.`, "error")]);
      return;
    }
    const content: {
      block:
        | { case: "text"; value: { text: string } }
        | { case: "image"; value: { mediaType: string; source: { case: "data"; value: Uint8Array } } };
    }[] = [{ block: { case: "text", value: { text } } }];
    for (const a of read.attachments) {
      if (a.kind === "text") content.push({ block: { case: "text", value: { text: attachmentText(a) } } });
      else
        content.push({
          block: {
            case: "image",
            value: { mediaType: a.mediaType, source: { case: "data", value: a.data } },
          },
        });
    }
    if (read.attachments.length > 0) {
      this.commit([
        this.p.paint(
          `  ⎿ attached ${read.attachments.map((a) => `${a.path}${a.kind === "image" ? " (image)" : ""}`).join(", ")}`,
          "dim",
        ),
      ]);
    }
    this.conn.send({
      sessionId: this.sessionId,
      event: { case: "userMessage", value: { content } },
    });
    this.setBusy("Thinking", true);
  }

  /** /clear and /resume: leave this session (it stays resumable) and open another on this connection. */
  private switchSession(target: SessionTarget): void {
    const old = this.sessionId;
    if (old) {
      this.left.add(old);
      this.conn.send({ event: { case: "detachSession", value: { requestId: "detach", sessionId: old } } });
    }
    this.closeStreams(false);
    this.clearPrompts();
    this.sessionId = undefined;
    this.ready = false;
    this.info = undefined;
    this.registered = [];
    this.registryKnown = false;
    this.inputTokens = 0;
    this.outputTokens = 0;
    this.costUsd = 0;
    this.remainingUsd = undefined;
    this.warning = "";
    this.widgetStatus = "";
    this.panel = [];
    this.panelTrees = [];
    this.actions.reset();
    this.target = target;
    this.fresh = false;
    // Going back to a session left earlier: its events count again.
    if (target.kind !== "create") this.left.delete(target.sessionId);
    if (target.kind === "create" && !this.plain) {
      // A fresh screen for a fresh session: scrollback too.
      this.output.write("\x1b[2J\x1b[3J\x1b[H");
      this.screen?.invalidate();
    }
    this.commit([
      this.p.paint(
        target.kind === "create" ? "── new session ──" : `── switching to ${sanitize(target.sessionId)} ──`,
        "dim",
      ),
    ]);
    this.start();
  }

  private resumePrefix(prefix: string, sessions: readonly SessionInfo[]): void {
    const found = sessions.filter((x) => x.sessionId.startsWith(prefix));
    if (found.length === 1) {
      if (found[0]!.sessionId === this.sessionId) this.flash("That is this session");
      else this.switchSession({ kind: "resume", sessionId: found[0]!.sessionId });
      return;
    }
    this.commit([
      this.p.paint(
        found.length === 0
          ? `No session starts with ${sanitize(prefix)}.`
          : `${found.length} sessions start with ${sanitize(prefix)}: ${found.map((x) => x.sessionId.slice(0, 12)).join(", ")}; type more of the id.`,
        "warning",
      ),
    ]);
  }

  /** /resume without an id: choose among the sessions the kernel lists. */
  private async resumePicker(sessions: readonly SessionInfo[]): Promise<void> {
    const others = [...sessions]
      .filter((x) => x.sessionId !== this.sessionId)
      .sort((a, b) => Number((b.startedAt?.seconds ?? 0n) - (a.startedAt?.seconds ?? 0n)));
    if (others.length === 0) {
      this.commit([this.p.paint("No other session to resume.", "dim")]);
      return;
    }
    const items = others.map((x) => ({
      value: x.sessionId,
      label: `${x.sessionId.slice(0, 10)}  ${statusName(x.status).padEnd(9)}  ${x.title || "(untitled)"}`,
    }));
    if (this.plain) {
      this.commit(["Sessions (/resume <id or prefix>):", ...items.map((i) => `  ${i.label}`)]);
      return;
    }
    // The picker owns the keyboard until it ends; the live region is redrawn after.
    this.input.removeListener("data", this.onData);
    this.screen?.update({ lines: [] });
    let chosen: string | undefined;
    try {
      chosen = await pick({
        input: this.input,
        output: this.output,
        title: "Resume which session?",
        items,
        env: process.env,
      });
    } finally {
      this.input.on("data", this.onData);
      this.input.resume?.();
      this.screen?.invalidate();
    }
    if (chosen) this.switchSession({ kind: "resume", sessionId: chosen });
    this.render();
  }

  private costLines(): string[] {
    const p = this.p;
    return [
      p.paint(
        `Session cost ${formatUsd(this.costUsd)}${this.remainingUsd !== undefined ? ` (${formatUsd(this.remainingUsd)} of the budget left)` : ""} · ${formatTokens(this.inputTokens)} tokens in · ${formatTokens(this.outputTokens)} out · ${this.model || "model pending"}`,
        "dim",
      ),
    ];
  }

  private helpLines(): string[] {
    const lines = [
      `Enter sends · Esc interrupts the turn · Ctrl-C twice ${this.detachOnExit ? "detaches (the session keeps running)" : "exits"} · Ctrl-O shows the last thinking`,
      "Approvals: y once · s this session · A always · n deny · N deny for the session · e edit arguments",
      "Enter sends · Alt-Enter, Shift-Enter, Ctrl-J or \\ then Enter: new line · ↑/↓ history · Ctrl-R search history",
      "@path attaches a file (Tab completes paths; images go to vision models) · Tab after / completes commands",
      "Actions ([buttons] in the task list and in results): Ctrl-T focuses the first · Tab/↓ next, Shift-Tab/↑ back · Enter runs it (policy applies) · Esc leaves",
      "Commands:",
    ];
    const all = allCommands(this.registered).filter((c) => c.name !== "quit");
    const width = Math.max(...all.map((c) => c.name.length)) + 2;
    for (const c of all) {
      const origin = c.provider ? ` (${c.provider}${c.expands ? ", prompt" : ""})` : "";
      lines.push(`  /${c.name.padEnd(width)}${c.description}${origin}`);
    }
    return lines.map((l) => this.p.paint(sanitize(l), "dim"));
  }

  private interrupt(): void {
    if (!this.sessionId) return;
    this.conn.send({ sessionId: this.sessionId, event: { case: "interrupt", value: {} } });
    this.flash(INTERRUPTING);
  }

  private flash(text: string): void {
    this.hint = text;
    this.hintUntil = this.now() + DOUBLE_PRESS_MS;
    if (this.plain) {
      this.writePlain(`${this.p.paint(text, "dim")}\n`);
      return;
    }
    if (this.hintTimer) clearTimeout(this.hintTimer);
    this.hintTimer = setTimeout(() => this.render(), DOUBLE_PRESS_MS + 50);
    this.hintTimer.unref?.();
  }

  // ---- plain mode ----------------------------------------------------------

  /** Plain mode pulls the next input line for whatever is waiting for one. */
  private takeLine(): void {
    if (!this.plain || this.finished) return;
    const item = this.permissions[0];
    const q = this.questions[0];
    if (item) {
      const line = this.lines.shift();
      if (line === undefined) {
        if (this.inputEnded) this.decide(item, ClientDecision.DENY, PlanDecisionScope.ONCE);
        return;
      }
      const answer = line.trim();
      if (answer.startsWith("{")) {
        try {
          this.decide(item, ClientDecision.ALLOW, PlanDecisionScope.ONCE, JSON.parse(answer) as JsonObject);
        } catch {
          this.writePlain("Not valid JSON; answer again\n");
          this.prompted = "";
        }
      } else if (/^[nr]\s+\S/.test(answer)) {
        this.decide(item, ClientDecision.DENY, PlanDecisionScope.ONCE, undefined, answer.slice(1).trim());
      } else {
        const before = this.permissions.length;
        this.permissionKey(item, answer || "n");
        if (this.permissions.length === before) {
          this.writePlain("Answer y, s, A, n, N or a JSON object of corrected arguments\n");
          this.prompted = "";
        }
      }
      this.takeLine();
      return;
    }
    if (q) {
      const line = this.lines.shift();
      if (line === undefined) return;
      this.answer(q, line);
      this.takeLine();
      return;
    }
    if (this.busy || !this.sessionId) return;
    const line = this.lines.shift();
    if (line === undefined) {
      if (this.inputEnded) this.exit();
      return;
    }
    if (line.trim() === "") {
      this.takeLine();
      return;
    }
    this.submit(line);
  }

  private streamPlain(s: OpenStream): void {
    if (s.kind === "thinking") return;
    let chunk = s.text.slice(s.written);
    s.written = s.text.length;
    if (s.kind === "tool") chunk = chunk.replace(/(^|\n)(?=.)/g, (_m, nl: string) => `${nl}  │ `);
    chunk = sanitizeLines(chunk);
    if (chunk === "") return;
    this.output.write(chunk);
    this.lineOpen = !chunk.endsWith("\n");
  }

  private endPlainLine(): void {
    if (this.lineOpen) this.output.write("\n");
    this.lineOpen = false;
  }

  private writePlain(text: string): void {
    this.endPlainLine();
    this.output.write(text);
  }

  // ---- drawing -------------------------------------------------------------

  private commit(lines: string[]): void {
    if (this.plain) {
      this.endPlainLine();
      if (lines.length > 0) this.output.write(`${lines.join("\n")}\n`);
      return;
    }
    this.screen!.commit(lines);
  }

  /**
   * Code highlighting loads once the session is attached and no turn runs: registering the
   * grammars holds the main thread for a few hundred milliseconds, which must delay neither
   * the first paint nor a streaming answer.
   */
  private loadHighlighterWhenIdle(): void {
    if (this.plain || !this.ready || this.busy) return;
    setTimeout(() => void loadHighlighter(), 0).unref?.();
  }

  private setBusy(label: string, busy: boolean): void {
    if (!busy && this.busy) setImmediate(() => this.loadHighlighterWhenIdle());
    if (busy && !this.busy) this.busySince = this.now();
    // The turn stopped: saying it is being interrupted is no longer true.
    if (!busy && this.hint === INTERRUPTING) this.hint = "";
    this.busy = busy;
    if (label) this.busyLabel = label;
    if (this.plain) return;
    if (busy && !this.spinnerTimer) {
      this.spinnerTimer = setInterval(() => this.render(), 120);
      this.spinnerTimer.unref?.();
    } else if (!busy && this.spinnerTimer) {
      clearInterval(this.spinnerTimer);
      this.spinnerTimer = undefined;
    }
  }

  private render(): void {
    if (this.finished) return;
    if (this.plain) {
      this.renderPlainPrompt();
      return;
    }
    const p = this.p;
    const width = this.screen!.width;
    const lines: string[] = [];
    let cursor: [number, number] | undefined;
    const rows = this.screen!.height;
    // Streams: text tail, collapsed thinking, tool output tail.
    for (const s of this.streams.values()) {
      if (s.kind === "thinking") {
        const n = s.text.split("\n").length;
        lines.push(p.paint(`✻ Thinking… (${n} line${n === 1 ? "" : "s"})`, "dim", "italic"));
      } else if (s.kind === "tool") {
        lines.push(p.paint(`  ${this.toolLabels.get(s.id) ?? "tool"} output`, "dim"));
        for (const l of s.text.replace(/\n$/, "").split("\n").slice(-TOOL_TAIL))
          lines.push(p.paint(`  │ ${sanitize(l)}`, "dim"));
      } else {
        const all = s.md ? s.md.live(width, p) : s.text.split("\n").map((l) => sanitize(l));
        const room = Math.max(3, rows - 10);
        lines.push(...all.slice(-room));
      }
    }
    // The overlay: a permission request or a question, visually set apart.
    const bar = p.paint("┃", "warning");
    // Overlay rows keep the bar on every wrapped row, so the prompt reads as one block.
    const barred = (text: string, maxRows = Number.POSITIVE_INFINITY) => {
      const rows = wrapLine(text, width - 2);
      for (const row of rows.slice(0, maxRows)) lines.push(`${bar} ${row}`);
      if (rows.length > maxRows) lines.push(`${bar} ${p.paint("…", "dim")}`);
    };
    const item = this.permissions[0];
    const q = this.questions[0];
    if (item) {
      // One line of what will happen, then the diff or preview, then what each answer allows.
      const count = this.permissions.length > 1 ? p.paint(` (1 of ${this.permissions.length})`, "dim") : "";
      const who = this.askedBy.get(item.id);
      if (who) barred(p.paint(`${who} asks:`, "bold", "accent"));
      barred(
        `${p.paint("Allow", "bold", "warning")} ${p.paint(`${item.provider}.${item.toolName}`, "bold")} to ${p.paint(sanitize(permissionAction(item)), "code")} · risk ${p.paint(riskName(item.risk), riskTone(item))}${count}`,
      );
      const preview = item.preview ? paintTree(item.preview, { painter: p }) : [];
      for (const l of [...preview, ...this.overlay].slice(0, Math.max(4, rows - 12))) barred(`${l}`);
      if (item.reason) barred(`${p.paint(sanitize(item.reason), "dim")}`, 2);
      if (this.editing) {
        barred(`${p.paint("Edit the arguments (JSON), Enter to allow once, Esc to go back:", "bold")}`);
        cursor = this.editorRows(lines, `${bar} ${p.paint("›", "accent")} `, `${bar}   `, 4, width);
      } else if (this.denying) {
        barred(`${p.paint("Why not? The model reads this. Enter denies, Esc goes back:", "bold")}`);
        cursor = this.editorRows(lines, `${bar} ${p.paint("›", "accent")} `, `${bar}   `, 4, width);
      } else {
        const k = (key: string) => p.paint(key, "bold", "accent");
        const scope = item.rememberScope ? sanitize(item.rememberScope) : "";
        const answers = scope
          ? [
              `${k("y")} this call`,
              `${k("s")} ${scope} for this session`,
              `${k("A")} always ${scope}`,
              `${k("n")} deny`,
              `${k("N")} deny for the session`,
              `${k("r")} deny and say why`,
              `${k("e")} edit`,
            ]
          : [`${k("y")} this call`, `${k("n")} deny`, `${k("r")} deny and say why`, `${k("e")} edit`];
        barred(answers.join(p.paint(" · ", "dim")));
        if (!scope && item.rememberUnavailable)
          barred(
            p.paint(`(only this call can be answered: ${sanitize(item.rememberUnavailable)})`, "dim"),
            2,
          );
      }
    } else if (q) {
      barred(
        `${p.paint(`Question from ${q.provider ? `${q.provider}.` : ""}${q.toolName}`, "bold", "warning")}`,
      );
      for (const l of [...paintTree(q.prompt, { painter: p }), ...this.overlay]) barred(`${l}`);
      const n = optionLabels(q.prompt).length;
      if (n > 0) barred(p.paint(`Type 1-${n} and Enter to choose an option`, "dim"));
      cursor = this.editorRows(lines, `${bar} ${p.paint("›", "accent")} `, `${bar}   `, 4, width);
    }
    if (!item && !q) lines.push(...this.subagents.liveLines(p, width));
    if (!this.ready && !item && !q) {
      for (const l of this.typedAhead) {
        const first = sanitize(l.split("\n")[0] ?? "");
        lines.push(p.paint(`⧗ queued: ${first}${l.includes("\n") ? " …" : ""}`, "dim"));
      }
    }
    if (this.busy && !item && !q) {
      const secs = Math.floor((this.now() - this.busySince) / 1000);
      const frame = SPINNER[Math.floor(this.now() / 120) % SPINNER.length];
      const tail = this.pendingTarget ? TYPE_AHEAD : "Esc to interrupt";
      lines.push(p.paint(`${frame} ${this.busyLabel}… ${secs}s · ${tail}`, "accent"));
    }
    for (const l of this.panel) lines.push(`${p.paint("│", "dim")} ${l}`);
    const focused = this.actions.current;
    if (focused) {
      // What it runs, cut to the width (arguments can be long), then the keys.
      const { at, of } = this.actions.position;
      const label = `[${sanitize(focused.label || focused.toolName)}]`;
      const args = focused.args ? ` ${JSON.stringify(focused.args)}` : "";
      const what = sanitize(`${focused.provider}.${focused.toolName}${args}`);
      const room = Math.max(10, width - visibleWidth(label) - 4);
      lines.push(
        `${p.paint("▸", "accent")} ${p.paint(label, "bold", "accent")} ${p.paint(what.length > room ? `${what.slice(0, room - 1)}…` : what, "dim")}`,
      );
      lines.push(p.paint(`  action ${at}/${of} · Enter runs it · Tab next · Esc leaves`, "dim"));
    }
    lines.push(p.paint("─".repeat(Math.min(width, 80)), "dim"));
    if (!item && !q) {
      cursor = this.editorRows(lines, `${p.paint("›", "accent")} `, "  ", 2, width);
    }
    lines.push(this.statusBar(width));
    const now = this.now();
    if (this.hint && now < this.hintUntil) lines.push(p.paint(this.hint, "dim"));
    this.screen!.update(cursor ? { lines, cursor } : { lines });
  }

  /**
   * The editor's text as rows under a prompt marker (continuation rows indented), cut to
   * fit so the screen never re-wraps them; answers where the cursor goes.
   */
  private editorRows(
    lines: string[],
    first: string,
    rest: string,
    prefixWidth: number,
    width: number,
  ): [number, number] {
    const p = this.p;
    const search = this.editor.search;
    if (search) {
      const match = search.match >= 0 ? (this.editor.entries[search.match] ?? "") : "";
      const head = p.paint(`(history search${search.match < 0 && search.query ? ", no match" : ""}) `, "dim");
      const label = `${head}${search.query}`;
      const at: [number, number] = [lines.length, visibleWidth(label)];
      lines.push(label);
      for (const row of match.split("\n").slice(0, 4)) lines.push(`${rest}${p.paint(sanitize(row), "dim")}`);
      return at;
    }
    const layout = this.editor.layout(Math.max(1, width - prefixWidth));
    const start = lines.length;
    for (const [i, row] of layout.rows.entries()) lines.push(`${i === 0 ? first : rest}${sanitize(row)}`);
    return [start + layout.cursorRow, prefixWidth + layout.cursorCol];
  }

  private statusBar(width: number): string {
    const p = this.p;
    if (this.widgetStatus) {
      let line = p.paint(this.widgetStatus + (this.replayOnly ? " · replay only" : ""), "dim");
      if (this.warning) line += ` ${p.paint(`⚠ ${this.warning}`, "warning")}`;
      return line;
    }
    // The widgets provider's format (model · context · cost), so the line reads the same
    // with or without it; the context part only where it fits: the line never wraps.
    const cost =
      formatUsd(this.costUsd) +
      (this.remainingUsd !== undefined ? ` (${formatUsd(this.remainingUsd)} left)` : "");
    const parts = [this.model || "model pending", cost];
    const ctx = this.context ? contextUsage(this.context.tokens, this.context.ceiling) : "";
    if (ctx && visibleWidth([...parts, ctx].join(" · ")) <= width) parts.splice(1, 0, ctx);
    if (this.replayOnly) parts.push("replay only");
    let line = p.paint(parts.join(" · "), "dim");
    if (this.warning) line += ` ${p.paint(`⚠ ${this.warning}`, "warning")}`;
    return line;
  }

  private renderPlainPrompt(): void {
    const item = this.permissions[0];
    const q = this.questions[0];
    let key = "";
    let text = "";
    if (item) {
      key = `p:${item.id}`;
      const preview = item.preview ? paintTree(item.preview, { painter: this.p }) : [];
      text =
        [
          `${this.askedBy.has(item.id) ? `${this.askedBy.get(item.id)} asks: ` : ""}Allow ${item.provider}.${item.toolName} to ${sanitize(permissionAction(item))} · risk ${riskName(item.risk)}`,
          ...preview,
          ...this.overlay,
          ...(item.reason ? [sanitize(item.reason)] : []),
          ...(item.rememberScope
            ? [`[s] and [A] cover: ${sanitize(item.rememberScope)}`]
            : item.rememberUnavailable
              ? [`Only this call can be answered: ${sanitize(item.rememberUnavailable)}`]
              : []),
        ]
          .map((l) => `┃ ${l}`)
          .join("\n") +
        `\nAnswer: [y] this call${item.rememberScope ? ", [s] for this session, [A] always" : ""}, [n] deny${item.rememberScope ? ", [N] deny for the session" : ""}, "n <why>" to deny with a reason, or corrected JSON arguments: `;
    } else if (q) {
      key = `q:${q.callId}`;
      text = `${[`Question from ${q.toolName}:`, ...paintTree(q.prompt, { painter: this.p })].map((l) => `┃ ${l}`).join("\n")}\n> `;
    }
    if (key && key !== this.prompted) {
      this.prompted = key;
      this.writePlain(text);
      this.lineOpen = true;
      this.takeLine();
    }
  }

  // ---- exit ----------------------------------------------------------------

  private exit(): void {
    if (this.busy && this.sessionId && !this.detachOnExit)
      this.conn.send({ sessionId: this.sessionId, event: { case: "interrupt", value: {} } });
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    if (this.spinnerTimer) clearInterval(this.spinnerTimer);
    this.spinnerTimer = undefined;
    if (this.hintTimer) clearTimeout(this.hintTimer);
    if (this.screen) {
      this.busy = false;
      this.render();
      this.screen.close();
    } else {
      this.endPlainLine();
    }
    this.finished = true;
    this.detachInput();
    this.conn.close();
    this.resolveRun({ sessionId: this.sessionId, status: this.status });
  }
}

/** The context indicator of the status line: "context 12k/200k (6%)", as the widgets provider writes it. */
export function contextUsage(tokens: number, ceiling: number): string {
  const pct = Math.min(999, Math.round((tokens / ceiling) * 100));
  return `context ${formatTokens(tokens)}/${formatTokens(ceiling)} (${pct}%)`;
}

/** Up to three commands close to `name`: by prefix, then by edit distance. */
export function suggest(name: string, known: readonly string[]): string[] {
  const unique = [...new Set(known)];
  const prefixed = unique.filter((k) => k.startsWith(name) || name.startsWith(k));
  const scored = unique
    .map((k) => ({ k, d: editDistance(name, k) }))
    .filter(({ k, d }) => d <= Math.max(2, Math.floor(Math.max(k.length, name.length) / 3)))
    .sort((a, b) => a.d - b.d)
    .map(({ k }) => k);
  return [...new Set([...prefixed, ...scored])].slice(0, 3);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function riskTone(item: PlanItem): "warning" | "error" | "dim" {
  return item.risk >= 4 ? "error" : item.risk >= 3 ? "warning" : "dim";
}

/** Which field of the tool's answer schema the typed text goes into. */
export function answerField(q: ServerEvent_InteractiveRequest): string {
  const props = q.responseSchema?.properties ?? [];
  const strings = props.filter((p) => p.schema?.type === SchemaType.STRING);
  const required = strings.find((p) => q.responseSchema?.required.includes(p.name));
  return (strings.find((p) => p.name === "answer") ?? required ?? strings[0])?.name ?? "answer";
}
