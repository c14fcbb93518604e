// Headless output of `agent run -p`. Live deltas, usage and status come from the
// session's ServerEvents; tool calls, tool results, plan decisions (with the rule that
// decided them) and messages are read back from the session file as they are
// persisted, so every record says exactly what was recorded. The final record is
// computed from the file too: status, turns, cost ledger, usage, final answer.
import { fromBinary, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { type ContentBlock, Role } from "@pluggableharness/protocol/content";
import {
  ApplyEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  SessionSettingEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import { type ServerEvent, StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { ApplyOutcome, PlanDecision, type PlanItem } from "@pluggableharness/protocol/plan";
import { Region } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { decisionName, kindName, riskName, statusName, treeText } from "@pluggableharness/provider-tui";
import type { SessionReader, StoredEvent } from "@pluggableharness/state";
import { EXIT, exitCodeFor } from "./exit-codes.ts";
import { type Io, line } from "./io.ts";

export type OutputFormat = "text" | "json" | "stream-json";

/** Kernel-written message events of failed, billed attempts are not part of the conversation. */
const ATTEMPT_FAILED = "attempt_failed:";
/** The kernel's record of why a turn failed (a message event kept out of the conversation). */
const TURN_FAILED = "turn_failed";
/** A compactor's summary call (the kernel's loop/turn/records.ts): not the model's answer. */
const COMPACTION_SUMMARY = "compaction_summary";

/** A tool as the init record lists it: the model's name for it, where it comes from, kind and risk. */
export interface InitTool {
  name: string;
  provider: string;
  tool: string;
  kind: string;
  risk: string;
}

export interface InitRecord {
  sessionId: string;
  model: string;
  /** The tools the model is offered in this run (plan mode leaves resources out). */
  tools: InitTool[];
  profile: string;
  cwd: string;
  headlessAsk: string;
  planMode: boolean;
}

export interface RunSummary {
  sessionId: string;
  /** The whole session tree's spend: its own and its sub-agents' (a resumed session includes earlier runs). */
  sessionCostUsd: number;
  /** The session's own calls only, all runs. */
  sessionOwnCostUsd: number;
  status: SessionStatus;
  detail: string;
  numTurns: number;
  durationMs: number;
  /** This run's spend: the session's own calls and those of the sub-agents it spawned. */
  totalCostUsd: number;
  /** This run's own calls only. */
  ownCostUsd: number;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  };
  finalText: string;
  /** `reason`: why it was denied and, for a rule or an unanswered ask, how to let it run. */
  denials: {
    provider: string;
    tool_name: string;
    tool_call_id: string;
    decided_by: string;
    reason?: string;
  }[];
  model: string;
}

function blockJson(b: ContentBlock): JsonObject {
  const v = b.block;
  switch (v.case) {
    case "text":
      return { type: "text", text: v.value.text };
    case "thinking":
      return { type: "thinking", thinking: v.value.text };
    case "redactedThinking":
      return { type: "redacted_thinking" };
    case "toolUse":
      return { type: "tool_use", id: v.value.id, name: v.value.name, input: v.value.input ?? {} };
    case "toolResult":
      return {
        type: "tool_result",
        tool_use_id: v.value.toolUseId,
        is_error: v.value.isError,
        content: v.value.content.map(blockJson),
      };
    case "image":
      return { type: "image", media_type: v.value.mediaType };
    case "document":
      return { type: "document", media_type: v.value.mediaType };
    default:
      return { type: "unknown" };
  }
}

function categoryName(c: ToolErrorCategory): string {
  return ToolErrorCategory[c]?.toLowerCase() ?? "unknown";
}

const OUTCOMES: Record<number, string> = {
  [ApplyOutcome.APPLIED]: "applied",
  [ApplyOutcome.FAILED]: "failed",
  [ApplyOutcome.DENIED]: "denied",
  [ApplyOutcome.CANCELLED]: "cancelled",
  [ApplyOutcome.INTERRUPTED]: "interrupted",
};

/**
 * Turns persisted events into stream-json records. Plan items are remembered from the
 * plan event (the policy's decision at plan-ready, and its rule); the record for an
 * item is written when its apply result is persisted, with the final decision and
 * who made it (a rule, a human, the headless setting).
 */
export class RecordDecoder {
  private readonly sessionId: string;
  private readonly items = new Map<string, PlanItem>();
  /** Tool call ids of plan items whose apply result has not been read yet. */
  private readonly undecided = new Set<string>();
  /**
   * tool_result records held back until their plan_decision is out: the kernel persists a
   * turn's apply result after the calls ran, but a reader wants the decision first.
   */
  private readonly held = new Map<string, JsonObject>();

  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  records(e: StoredEvent): JsonObject[] {
    try {
      const out: JsonObject[] = [];
      for (const r of this.decode(e)) {
        const id = typeof r["tool_call_id"] === "string" ? r["tool_call_id"] : "";
        if (r["type"] === "tool_result" && this.undecided.has(id)) {
          this.held.set(id, r);
          continue;
        }
        out.push(r);
        if (r["type"] === "plan_decision") {
          this.undecided.delete(id);
          const result = this.held.get(id);
          if (result) {
            this.held.delete(id);
            out.push(result);
          }
        }
      }
      return out;
    } catch (err) {
      return [
        {
          type: "warning",
          session_id: this.sessionId,
          message: `event ${e.sequence} could not be decoded: ${(err as Error).message}`,
        },
      ];
    }
  }

  /** Results still held (their apply result was never written: the run was killed). */
  flush(): JsonObject[] {
    const rest = [...this.held.values()];
    this.held.clear();
    this.undecided.clear();
    return rest;
  }

  private decode(e: StoredEvent): JsonObject[] {
    const sessionId = this.sessionId;
    switch (e.kind) {
      case EventKind.MESSAGE: {
        if (e.producer.category !== PluginCategory.KERNEL) return [];
        const m = fromBinary(MessageEventSchema, e.payload);
        if (!m.message || m.syntheticReason.startsWith(ATTEMPT_FAILED)) return [];
        if (m.syntheticReason === COMPACTION_SUMMARY) {
          const text = m.message.content
            .map((b) => (b.block.case === "text" ? b.block.value.text : ""))
            .join("");
          return [
            {
              type: "compaction_summary",
              session_id: sessionId,
              turn_id: m.turnId,
              ...(m.model ? { model: `${m.model.provider}/${m.model.id}` } : {}),
              cost_usd: m.costUsd,
              summary: text,
            },
          ];
        }
        if (m.syntheticReason === TURN_FAILED) {
          const text = m.message.content
            .map((b) => (b.block.case === "text" ? b.block.value.text : ""))
            .join("");
          return [{ type: "turn_failed", session_id: sessionId, turn_id: m.turnId, message: text }];
        }
        return [
          {
            type: "message",
            session_id: sessionId,
            turn_id: m.turnId,
            role: m.message.role === Role.ASSISTANT ? "assistant" : "user",
            ...(m.model ? { model: `${m.model.provider}/${m.model.id}` } : {}),
            ...(m.syntheticReason ? { synthetic_reason: m.syntheticReason } : {}),
            content: m.message.content.map(blockJson),
          },
        ];
      }
      case EventKind.TOOL_CALL: {
        const c = fromBinary(ToolCallEventSchema, e.payload);
        return [
          {
            type: "tool_call",
            session_id: sessionId,
            turn_id: c.turnId,
            tool_call_id: c.call?.id ?? "",
            provider: c.provider,
            tool_name: c.call?.toolName ?? "",
            input: c.call?.arguments ?? {},
            kind: kindName(c.kind),
            risk: riskName(c.risk),
          },
        ];
      }
      case EventKind.TOOL_RESULT: {
        const r = fromBinary(ToolResultEventSchema, e.payload);
        const out = new TextDecoder().decode(Buffer.concat(r.output.map((c) => Buffer.from(c.data))));
        return [
          {
            type: "tool_result",
            session_id: sessionId,
            turn_id: r.turnId,
            tool_call_id: r.toolCallId,
            provider: r.provider,
            tool_name: r.toolName,
            denied: r.denied,
            ...(r.outcome.case === "result" ? { result: (r.outcome.value.payload ?? {}) as JsonValue } : {}),
            ...(r.outcome.case === "error"
              ? {
                  error: {
                    category: categoryName(r.outcome.value.category),
                    message: r.outcome.value.message,
                  },
                }
              : {}),
            ...(out ? { output: out } : {}),
            ...(r.exitStatus
              ? {
                  exit_code: r.exitStatus.exitCode,
                  ...(r.exitStatus.signal ? { signal: r.exitStatus.signal } : {}),
                }
              : {}),
            ...(r.duration
              ? { duration_ms: Number(r.duration.seconds) * 1000 + Math.round(r.duration.nanos / 1e6) }
              : {}),
            attempts: r.attempts,
          },
        ];
      }
      case EventKind.PLAN: {
        for (const i of fromBinary(PlanEventSchema, e.payload).plan?.items ?? []) {
          this.items.set(i.id, i);
          if (i.toolCallId) this.undecided.add(i.toolCallId);
        }
        return [];
      }
      case EventKind.APPLY: {
        const apply = fromBinary(ApplyEventSchema, e.payload).apply;
        return (apply?.items ?? []).map((a) => {
          const item = this.items.get(a.planItemId);
          return {
            type: "plan_decision",
            session_id: sessionId,
            turn_id: apply?.turnId ?? "",
            plan_item_id: a.planItemId,
            tool_call_id: a.toolCallId,
            provider: item?.provider ?? "",
            tool_name: item?.toolName ?? "",
            risk: item ? riskName(item.risk) : "unknown",
            decision: decisionName(a.decision),
            decided_by: a.decidedBy,
            policy_decision: item ? decisionName(item.decision) : "unknown",
            policy_rule: item?.decidedBy ?? "",
            outcome: OUTCOMES[a.outcome] ?? "unknown",
            ...(item?.reason ? { reason: item.reason } : {}),
            ...(a.error
              ? { error: { category: categoryName(a.error.category), message: a.error.message } }
              : {}),
          };
        });
      }
      case EventKind.SESSION_SETTING: {
        if (e.producer.category !== PluginCategory.KERNEL) return [];
        const s = fromBinary(SessionSettingEventSchema, e.payload);
        const common = { type: "session_setting", session_id: sessionId, origin: s.origin };
        if (s.change.case === "model") {
          const { provider, modelId, previous } = s.change.value;
          return [
            {
              ...common,
              // null: back to the profile's model chain.
              model: provider ? `${provider}/${modelId}` : null,
              previous_model: previous || null,
              ...(s.detail ? { detail: s.detail } : {}),
            },
          ];
        }
        if (s.change.case === "planMode") return [{ ...common, plan_mode: s.change.value.on }];
        return [];
      }
      default:
        return [];
    }
  }
}

/** What the session's sub-agents spent: in all, and during this run. */
export interface SubagentSpend {
  readonly usd: number;
  readonly sinceUsd: number;
}

/**
 * The final record's facts, from the session file: turns, usage, cost and denials of
 * this run (the events after `afterSequence`), and the whole session's cost. Costs are
 * reported for the tree (the spec's roll-up: a sub-agent's spend is its parent's too)
 * beside the session's own; `subagents` comes from the children's files.
 */
export function summarize(
  reader: SessionReader,
  sessionId: string,
  status: SessionStatus,
  detail: string,
  durationMs: number,
  afterSequence = 0,
  subagents: SubagentSpend = { usd: 0, sinceUsd: 0 },
): RunSummary {
  const turns = new Set<string>();
  let finalText = "";
  let model = "";
  for (const e of reader.events({ kinds: [EventKind.MESSAGE], afterSequence })) {
    if (e.producer.category !== PluginCategory.KERNEL) continue;
    const m = fromBinary(MessageEventSchema, e.payload);
    if (
      !m.message ||
      m.message.role !== Role.ASSISTANT ||
      m.syntheticReason.startsWith(ATTEMPT_FAILED) ||
      m.syntheticReason === TURN_FAILED ||
      m.syntheticReason === COMPACTION_SUMMARY
    )
      continue;
    turns.add(m.turnId);
    if (m.model) model = `${m.model.provider}/${m.model.id}`;
    const text = m.message.content
      .flatMap((b) =>
        b.block.case === "text" && b.block.value.text.trim() !== "" ? [b.block.value.text] : [],
      )
      .join("\n\n");
    if (text.trim() !== "") finalText = text;
  }
  const usage = {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  };
  let costUsd = 0;
  for (const row of reader.costLedger()) {
    if (row.eventSequence <= afterSequence) continue;
    costUsd += row.costUsd;
    usage.input_tokens += row.inputTokens;
    usage.output_tokens += row.outputTokens;
    usage.cache_read_input_tokens += row.cacheReadTokens;
    usage.cache_creation_input_tokens += row.cacheWriteTokens;
  }
  const items = new Map<string, PlanItem>();
  const denials: RunSummary["denials"] = [];
  const counted = new Set<string>();
  for (const e of reader.events({
    kinds: [EventKind.PLAN, EventKind.APPLY, EventKind.TOOL_RESULT],
    afterSequence,
  })) {
    if (e.kind === EventKind.PLAN) {
      for (const i of fromBinary(PlanEventSchema, e.payload).plan?.items ?? []) items.set(i.id, i);
      continue;
    }
    if (e.kind === EventKind.TOOL_RESULT) {
      // Every denied call has a denied result: data sources and interactive calls too,
      // which have no plan item.
      const r = fromBinary(ToolResultEventSchema, e.payload);
      if (!r.denied || counted.has(r.toolCallId)) continue;
      counted.add(r.toolCallId);
      const message = r.outcome.case === "error" ? r.outcome.value.message : "";
      denials.push({
        provider: r.provider,
        tool_name: r.toolName,
        tool_call_id: r.toolCallId,
        decided_by: /\(decided by ([^)]*)\)$/.exec(message)?.[1] ?? "",
        ...(message ? { reason: message } : {}),
      });
      continue;
    }
    for (const a of fromBinary(ApplyEventSchema, e.payload).apply?.items ?? []) {
      if (a.decision !== PlanDecision.DENY) continue;
      const item = items.get(a.planItemId);
      const entry = {
        provider: item?.provider ?? "",
        tool_name: item?.toolName ?? "",
        tool_call_id: a.toolCallId,
        decided_by: a.decidedBy,
        ...(a.error?.message || item?.reason ? { reason: a.error?.message || item?.reason } : {}),
      };
      const known = denials.findIndex((d) => d.tool_call_id === a.toolCallId);
      if (known >= 0) denials[known] = entry;
      else denials.push(entry);
      counted.add(a.toolCallId);
    }
  }
  return {
    sessionId,
    status,
    detail,
    numTurns: turns.size,
    durationMs,
    totalCostUsd: costUsd + subagents.sinceUsd,
    ownCostUsd: costUsd,
    sessionCostUsd: reader.costUsd() + subagents.usd,
    sessionOwnCostUsd: reader.costUsd(),
    usage,
    finalText,
    denials,
    model,
  };
}

/** stream-json/json subtype: the spec's bound names, "success", "cancelled" or "failed". */
export function subtypeOf(status: SessionStatus): string {
  if (status === SessionStatus.COMPLETED) return "success";
  return statusName(status);
}

/**
 * The kernel's guards that end a run FAILED with their name leading the detail
 * ("doom_loop: …"). They stop a run the way a bound does, so a denial counts as for bounds.
 */
const GUARDS = ["doom_loop", "denial_breaker", "crash_breaker"] as const;

function guardOf(detail: string): (typeof GUARDS)[number] | undefined {
  return GUARDS.find((g) => detail === g || detail.startsWith(`${g}:`));
}

/**
 * The exit status of a headless run. A run a guard ended is denied (4) when the denial
 * breaker ended it, or when calls were denied before the doom-loop or crash guard did (a
 * loop of denied calls is a denial, not a failure); other failures are 1.
 */
export function runExitCode(summary: RunSummary): number {
  if (summary.status === SessionStatus.FAILED) {
    const guard = guardOf(summary.detail);
    if (guard === "denial_breaker" || (guard && summary.denials.length > 0)) return EXIT.DENIED_OR_CANCELLED;
  }
  return exitCodeFor(summary.status, summary.denials.length);
}

/** What the start-up Ctrl-C leaves: a cancelled run that never had a session or a prompt. */
export const STARTUP_INTERRUPTED = "interrupted during start-up; the prompt was not sent";

/** The result of a headless run interrupted before its session existed (exit 4). */
export function cancelledBeforeSession(io: Io, format: OutputFormat, durationMs: number): number {
  return new HeadlessPrinter(io, format, false).result({
    sessionId: "",
    sessionCostUsd: 0,
    sessionOwnCostUsd: 0,
    status: SessionStatus.CANCELLED,
    detail: STARTUP_INTERRUPTED,
    numTurns: 0,
    durationMs,
    totalCostUsd: 0,
    ownCostUsd: 0,
    usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    finalText: "",
    denials: [],
    model: "",
  });
}

export function resultRecord(s: RunSummary): JsonObject {
  const exit = runExitCode(s);
  return {
    type: "result",
    // A completed run with denied calls is not a success: exit 4, and the subtype says so.
    subtype:
      s.status === SessionStatus.COMPLETED && exit !== 0 ? "error_permission_denied" : subtypeOf(s.status),
    is_error: exit !== 0,
    status: statusName(s.status),
    ...(s.detail ? { detail: s.detail } : {}),
    // null: the run was interrupted before it had a session.
    session_id: s.sessionId || null,
    model: s.model,
    num_turns: s.numTurns,
    duration_ms: s.durationMs,
    // Tree totals (sub-agents included), each beside the session's own part.
    total_cost_usd: s.totalCostUsd,
    own_cost_usd: s.ownCostUsd,
    session_cost_usd: s.sessionCostUsd,
    session_own_cost_usd: s.sessionOwnCostUsd,
    usage: s.usage,
    result: s.finalText,
    permission_denials: s.denials,
    exit_code: exit,
  };
}

function isTranscript(region: Region | undefined): boolean {
  return region === undefined || region === Region.MAIN_CHAT || region === Region.UNSPECIFIED;
}

export class HeadlessPrinter {
  private readonly io: Io;
  private readonly format: OutputFormat;
  private readonly verbose: boolean;
  private sessionId = "";
  private renders = 0;
  private decoder: RecordDecoder | undefined;

  constructor(io: Io, format: OutputFormat, verbose: boolean) {
    this.io = io;
    this.format = format;
    this.verbose = verbose;
  }

  private json(record: JsonObject): void {
    line(this.io.out, JSON.stringify(record));
  }

  init(r: InitRecord): void {
    this.sessionId = r.sessionId;
    if (this.format !== "stream-json") return;
    this.json({
      type: "init",
      session_id: r.sessionId,
      model: r.model,
      tools: r.tools.map((t) => ({
        name: t.name,
        provider: t.provider,
        tool: t.tool,
        kind: t.kind,
        risk: t.risk,
      })),
      profile: r.profile,
      cwd: r.cwd,
      headless_ask: r.headlessAsk,
      plan_mode: r.planMode,
    });
  }

  event(ev: ServerEvent): void {
    const e = ev.event;
    // Widgets' panels (the status line, the task list) are for a screen: a headless run
    // already reports usage and tool results in its own records.
    const region = e.case === "render" ? e.value.content?.region : undefined;
    if (region === Region.INPUT_BAR || region === Region.SIDEBAR) return;
    // Renders outside the conversation (a status-line notice such as a rate-limit retry)
    // are not transcript: they go to stderr (text) or a notice record (stream-json).
    if (e.case === "render" && !isTranscript(e.value.content?.region)) {
      const text = treeText(e.value.content?.content);
      // An empty status line only clears a screen's notice.
      if (text.trim() === "") return;
      if (this.format === "stream-json")
        this.json({ type: "notice", session_id: ev.sessionId || this.sessionId, text });
      else line(this.io.err, `agent: ${text}`);
      return;
    }
    if (this.format === "text") {
      if (this.verbose && e.case === "render") {
        // The transcript: every finished unit as its producer rendered it.
        if (this.renders++ > 0) line(this.io.out);
        line(this.io.out, treeText(e.value.content?.content));
      }
      if (e.case === "error") line(this.io.err, `agent: ${e.value.error?.message ?? "error"}`);
      return;
    }
    if (this.format !== "stream-json") {
      if (e.case === "error") line(this.io.err, `agent: ${e.value.error?.message ?? "error"}`);
      return;
    }
    const sid = ev.sessionId || this.sessionId;
    switch (e.case) {
      case "streamDelta":
        this.json({
          type: "delta",
          session_id: sid,
          target_id: e.value.targetId,
          kind:
            e.value.kind === StreamDeltaKind.THINKING
              ? "thinking"
              : e.value.kind === StreamDeltaKind.TOOL_OUTPUT
                ? "tool_output"
                : "text",
          text: e.value.text,
        });
        return;
      case "usageUpdate":
        this.json({
          type: "usage",
          session_id: sid,
          turn_id: e.value.turnId,
          provider: e.value.providerName,
          model: e.value.modelId,
          input_tokens: Number(e.value.inputTokens),
          output_tokens: Number(e.value.outputTokens),
          cache_read_input_tokens: Number(e.value.cacheReadTokens),
          cache_creation_input_tokens: Number(e.value.cacheWriteTokens),
          cost_usd: e.value.costUsd,
          session_cost_usd: e.value.sessionCostUsd,
          ...(e.value.remainingCostBudgetUsd !== undefined
            ? { remaining_budget_usd: e.value.remainingCostBudgetUsd }
            : {}),
        });
        return;
      case "sessionStatusUpdate":
        this.json({
          type: "status",
          session_id: sid,
          status: statusName(e.value.status),
          previous_status: statusName(e.value.previousStatus),
          ...(e.value.detail ? { detail: e.value.detail } : {}),
        });
        return;
      case "sessionTreeUpdate": {
        // A sub-agent (or a deeper descendant) started, progressed or ended.
        const u = e.value;
        this.json({
          type: "subagent",
          session_id: sid,
          child_session_id: u.childSessionId,
          parent_session_id: u.parentSessionId,
          profile: u.profile,
          depth: u.depth,
          status: statusName(u.status),
          ...(u.title ? { title: u.title } : {}),
          ...(u.activity ? { activity: u.activity } : {}),
          turns: u.turns,
          cost_usd: u.costUsd,
          ...(u.detail ? { detail: u.detail } : {}),
        });
        return;
      }
      case "render":
        if (this.verbose)
          this.json({ type: "render", session_id: sid, text: treeText(e.value.content?.content) });
        return;
      case "error":
        this.json({ type: "error", session_id: sid, message: e.value.error?.message ?? "" });
        return;
      default:
        return;
    }
  }

  /** Records for events newly persisted in the session file. */
  persisted(events: readonly StoredEvent[]): void {
    if (this.format !== "stream-json") return;
    this.decoder ??= new RecordDecoder(this.sessionId);
    for (const e of events) for (const r of this.decoder.records(e)) this.json(r);
  }

  result(summary: RunSummary): number {
    if (this.decoder) for (const r of this.decoder.flush()) this.json(r);
    const exit = runExitCode(summary);
    if (this.format === "text") {
      if (!this.verbose) {
        if (summary.finalText) line(this.io.out, summary.finalText.replace(/\n+$/, ""));
      }
      if (exit !== 0) {
        const why = summary.detail || statusName(summary.status);
        const denied = summary.denials.length > 0 ? `; ${summary.denials.length} tool call(s) denied` : "";
        const what = summary.sessionId ? `session ${summary.sessionId} ended` : "the run ended";
        line(this.io.err, `agent: ${what}: ${why}${denied}`);
        // Each refusal with its reason: which rule refused or asked, and how to change that.
        for (const d of summary.denials)
          if (d.reason) line(this.io.err, `agent: denied ${d.provider}.${d.tool_name}: ${d.reason}`);
      }
    } else {
      this.json(resultRecord(summary));
    }
    return exit;
  }
}
