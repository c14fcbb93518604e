// The kernel's generic renderer: a render.v1 tree for any persisted event.v1 payload. It
// is what paints an event whose producer is the kernel, or whose producer cannot render
// it, and what `agent sessions show` prints. Its imports are the protocol's generated
// types only (no runtime, configuration or plugin code), so a command that only reads a
// session file can load it without loading the kernel
// (`@pluggableharness/kernel/render`).
import { create, type DescMessage, fromBinary, type JsonObject } from "@bufbuild/protobuf";
import type { PluginCategory } from "@pluggableharness/protocol/common";
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";
import { Role } from "@pluggableharness/protocol/content";
import {
  ApplyEventSchema,
  CompactionEventSchema,
  ContextContributionEventSchema,
  HookErrorEventSchema,
  type MemoryMutationEvent,
  MemoryMutationEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  type SessionSettingEvent,
  SessionSettingEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import { HookErrorCategory } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { MemoryScope, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import { ApplyOutcome, PlanDecision } from "@pluggableharness/protocol/plan";
import {
  type PlacedContent,
  PlacedContentSchema,
  Region,
  type RenderNode,
  RenderNodeSchema,
  type RenderTree,
  RenderTreeSchema,
  TextStyle,
} from "@pluggableharness/protocol/render";
import { type ToolError, ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { memoryContentNode } from "../memory/links.ts";
import { argumentSummary } from "./argument-summary.ts";

/** What a renderer needs of a persisted event. StoredEvent satisfies it. */
export interface RenderableEvent {
  readonly sequence: number;
  readonly kind: EventKind;
  readonly kindText: string;
  readonly producer: { readonly category: PluginCategory; readonly name: string; readonly version: string };
  readonly schemaVersion: string;
  readonly payload: Uint8Array;
}

type NodeInit = Parameters<typeof create<typeof RenderNodeSchema>>[1];

const node = (init: NodeInit): RenderNode => create(RenderNodeSchema, init);
const text = (content: string, style: TextStyle = TextStyle.UNSPECIFIED): RenderNode =>
  node({ node: { case: "text", value: { content, style } } });
const code = (content: string, language?: string): RenderNode =>
  node({ node: { case: "codeBlock", value: { content, ...(language ? { language } : {}) } } });
const group = (children: RenderNode[]): RenderNode => node({ node: { case: "group", value: { children } } });
const collapsible = (summary: string, children: RenderNode[], collapsed = true): RenderNode =>
  node({ node: { case: "collapsible", value: { summary, children, collapsedByDefault: collapsed } } });

/**
 * A memory change: what happened to which record, then the record's text with its
 * [[references]] as link nodes (memory/links.ts), so every frontend can follow them.
 */
function renderMemoryChange(kind: EventKind, e: MemoryMutationEvent): RenderNode {
  const r = e.record;
  const pending = r?.status === RecordStatus.PENDING;
  const verb =
    kind === EventKind.MEMORY_WRITE
      ? pending
        ? "drafted"
        : "remembered"
      : kind === EventKind.MEMORY_UPDATE
        ? e.origin === "/memory" || e.origin === "agent memory"
          ? "approved"
          : "updated"
        : pending
          ? "rejected the draft"
          : "forgot";
  const type = (MemoryType[r?.type ?? 0] ?? "unspecified").toLowerCase();
  const scope = (MemoryScope[r?.scope ?? 0] ?? "unspecified").toLowerCase();
  const by = e.origin ? ` (${e.origin})` : "";
  const head = text(
    `Memory ${verb}${by}: "${r?.id ?? "?"}" — ${r?.title || r?.id || "?"} [${type}, ${scope}]`,
    TextStyle.DIM,
  );
  const body = (r?.content ?? []).map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\n");
  if (kind === EventKind.MEMORY_DELETE || !body) return head;
  return group([head, memoryContentNode(body)]);
}

function json(value: JsonObject | undefined): string {
  return JSON.stringify(value ?? {}, null, 2);
}

function blockNodes(blocks: readonly ContentBlock[]): RenderNode[] {
  const out: RenderNode[] = [];
  for (const b of blocks) {
    const v = b.block;
    switch (v.case) {
      case "text":
        out.push(text(v.value.text));
        break;
      case "thinking":
        out.push(collapsible("Thinking", [text(v.value.text, TextStyle.DIM)]));
        break;
      case "redactedThinking":
        out.push(text("(redacted reasoning)", TextStyle.DIM));
        break;
      case "toolUse":
        out.push(collapsible(`Tool call ${v.value.name}`, [code(json(v.value.input), "json")], false));
        break;
      case "toolResult":
        out.push(
          collapsible(
            `Result of ${v.value.toolUseId}${v.value.isError ? " (error)" : ""}`,
            blockNodes(v.value.content).map((n) =>
              v.value.isError && n.node.case === "text" ? text(n.node.value.content, TextStyle.ERROR) : n,
            ),
          ),
        );
        break;
      case "image":
        out.push(text(`(image, ${v.value.mediaType})`, TextStyle.DIM));
        break;
      case "document":
        out.push(
          text(
            `(document${v.value.filename ? ` ${v.value.filename}` : ""}, ${v.value.mediaType})`,
            TextStyle.DIM,
          ),
        );
        break;
      default:
        out.push(text("(unknown content)", TextStyle.DIM));
    }
  }
  return out;
}

/**
 * A message without its tool_use and tool_result blocks: every call is shown once, by
 * its own tool_call event, and every result by its tool_result event. Undefined when
 * nothing is left (a message of tool results only, or of tool calls only).
 */
function renderMessage(m: Message | undefined, syntheticReason: string): RenderNode | undefined {
  if (!m) return text("(empty message)", TextStyle.DIM);
  const shown = m.content.filter((b) => b.block.case !== "toolUse" && b.block.case !== "toolResult");
  if (shown.length === 0) return undefined;
  // The kernel's record of a failed turn is not the model speaking.
  if (syntheticReason === "turn_failed")
    return group([text("Turn failed", TextStyle.ERROR), ...blockNodes(shown)]);
  // A compactor's summary call: shown folded, it is not the model answering the user.
  if (syntheticReason === "compaction_summary")
    return collapsible("Summary of the earlier conversation (compaction)", blockNodes(shown));
  const who = m.role === Role.ASSISTANT ? "Assistant" : "User";
  const header = syntheticReason ? `${who} (kernel: ${syntheticReason})` : who;
  return group([text(header, TextStyle.BOLD), ...blockNodes(shown)]);
}

/** The tool as a transcript names it: provider.tool, or the model's name when no provider served it. */
function toolLabel(provider: string, tool: string): string {
  return provider ? `${provider}.${tool}` : tool;
}

function errorLine(e: ToolError): string {
  const name = ToolErrorCategory[e.category]?.toLowerCase() ?? "unknown";
  return `${name}: ${e.message}`;
}

const DECISIONS: Record<number, string> = {
  [PlanDecision.PENDING]: "pending",
  [PlanDecision.ALLOW]: "allow",
  [PlanDecision.ASK]: "ask",
  [PlanDecision.DENY]: "deny",
};

const OUTCOMES: Record<number, string> = {
  [ApplyOutcome.APPLIED]: "applied",
  [ApplyOutcome.FAILED]: "failed",
  [ApplyOutcome.DENIED]: "denied",
  [ApplyOutcome.CANCELLED]: "cancelled",
  [ApplyOutcome.INTERRUPTED]: "interrupted",
};

/** context.v1.CompactionReason's text forms (the values are the wire numbers). */
const COMPACTION_REASONS: Record<number, string> = { 1: "threshold", 2: "overflow", 3: "operator" };

const V1_SCHEMAS: Partial<Record<EventKind, DescMessage>> = {
  [EventKind.MESSAGE]: MessageEventSchema,
  [EventKind.TOOL_CALL]: ToolCallEventSchema,
  [EventKind.TOOL_RESULT]: ToolResultEventSchema,
  [EventKind.PLAN]: PlanEventSchema,
  [EventKind.APPLY]: ApplyEventSchema,
  [EventKind.CONTEXT_CONTRIBUTION]: ContextContributionEventSchema,
  [EventKind.MEMORY_WRITE]: MemoryMutationEventSchema,
  [EventKind.MEMORY_UPDATE]: MemoryMutationEventSchema,
  [EventKind.MEMORY_DELETE]: MemoryMutationEventSchema,
  [EventKind.HOOK_ERROR]: HookErrorEventSchema,
  [EventKind.COMPACTION]: CompactionEventSchema,
  [EventKind.SESSION_SETTING]: SessionSettingEventSchema,
};

/** A /model or /plan change, one line where it happened (a dropped choice as a warning). */
function renderSetting(e: SessionSettingEvent): RenderNode {
  // The operator's own commands and flags are named; the API's and the kernel's are not.
  const by = /^[/-]/.test(e.origin) ? ` (${e.origin})` : "";
  const was = (previous: string) => (previous ? `; was ${previous}` : "");
  switch (e.change.case) {
    case "model": {
      const { provider, modelId, previous } = e.change.value;
      if (e.origin === "resume") {
        return text(
          `Model ${previous || "choice"} is no longer available${e.detail ? ` (${e.detail})` : ""}: back to the profile's model`,
          TextStyle.WARNING,
        );
      }
      return text(
        provider
          ? `Model switched to ${provider}/${modelId}${by}${was(previous)}`
          : `Model back to the profile's${by}${was(previous)}`,
        TextStyle.DIM,
      );
    }
    case "planMode":
      return text(
        e.change.value.on
          ? `Plan mode on${by}: tools that change things are withheld from the model`
          : `Plan mode off${by}`,
        TextStyle.DIM,
      );
    default:
      return text("(session setting changed)", TextStyle.DIM);
  }
}

/**
 * Why a persisted event cannot be read as what its row says it is (an unknown kind, a
 * payload that does not decode as its event.v1 message), or undefined when it can. An
 * event of a later schema version is not damage: it just has no renderer here.
 */
export function eventProblem(event: RenderableEvent): string | undefined {
  const schema = V1_SCHEMAS[event.kind];
  if (!schema) return `unknown event kind "${event.kindText}"`;
  if (event.schemaVersion !== "1" && event.schemaVersion !== "v1") return undefined;
  try {
    fromBinary(schema, event.payload);
    return undefined;
  } catch (err) {
    return `its ${event.kindText} payload does not decode (${(err as Error).message})`;
  }
}

/**
 * The kernel's rendering of any persisted event; never throws. A tree without a root
 * means the event has nothing to show (frontends are not sent it).
 */
export function genericRenderTree(event: RenderableEvent): RenderTree {
  const root = ((): RenderNode | undefined => {
    const v1 = event.schemaVersion === "1" || event.schemaVersion === "v1";
    if (!v1) {
      return text(
        `(${event.kindText} event from ${event.producer.name} ${event.producer.version}, schema version ${event.schemaVersion}: no renderer available)`,
        TextStyle.DIM,
      );
    }
    try {
      switch (event.kind) {
        case EventKind.MESSAGE: {
          const e = fromBinary(MessageEventSchema, event.payload);
          return renderMessage(e.message, e.syntheticReason);
        }
        case EventKind.TOOL_CALL: {
          const e = fromBinary(ToolCallEventSchema, event.payload);
          const head = `→ ${toolLabel(e.provider, e.call?.toolName ?? "?")}`;
          const args = argumentSummary(e.call?.arguments);
          // The whole arguments stay one fold away when the line could not show them all.
          return args.complete
            ? text(args.line ? `${head} ${args.line}` : head, TextStyle.BOLD)
            : collapsible(`${head} ${args.line}`, [code(json(e.call?.arguments), "json")]);
        }
        case EventKind.TOOL_RESULT: {
          const e = fromBinary(ToolResultEventSchema, event.payload);
          const head = `${e.denied ? "✗ denied" : e.outcome.case === "error" ? "✗" : "✓"} ${toolLabel(e.provider, e.toolName)}`;
          const children: RenderNode[] = [];
          if (e.outcome.case === "result") children.push(code(json(e.outcome.value.payload), "json"));
          if (e.outcome.case === "error") children.push(text(errorLine(e.outcome.value), TextStyle.ERROR));
          const output = e.output.map((c) => new TextDecoder().decode(c.data)).join("");
          if (output) children.push(code(output));
          return collapsible(head, children, e.outcome.case !== "error");
        }
        case EventKind.PLAN: {
          const plan = fromBinary(PlanEventSchema, event.payload).plan;
          return node({
            node: {
              case: "table",
              value: {
                headers: ["tool", "decision", "decided by", "reason"],
                rows: (plan?.items ?? []).map((i) => ({
                  cells: [
                    `${i.provider}.${i.toolName}`,
                    DECISIONS[i.decision] ?? "?",
                    i.decidedBy,
                    i.reason ?? "",
                  ],
                })),
              },
            },
          });
        }
        case EventKind.APPLY: {
          const apply = fromBinary(ApplyEventSchema, event.payload).apply;
          return node({
            node: {
              case: "list",
              value: {
                items: (apply?.items ?? []).map((i) =>
                  text(
                    `${i.toolCallId}: ${OUTCOMES[i.outcome] ?? "?"} (${DECISIONS[i.decision] ?? "?"} by ${i.decidedBy})${i.error ? ` — ${errorLine(i.error)}` : ""}`,
                  ),
                ),
              },
            },
          });
        }
        case EventKind.COMPACTION: {
          const e = fromBinary(CompactionEventSchema, event.payload);
          const reason = COMPACTION_REASONS[e.reason] ?? "unspecified";
          return text(
            `Compacted the conversation (${reason}${e.compactor ? `, by ${e.compactor}` : ""}): ${e.messagesBefore} messages, ~${e.tokensBefore} tokens → ${e.messagesAfter} messages, ~${e.tokensAfter} tokens`,
            TextStyle.DIM,
          );
        }
        case EventKind.SESSION_SETTING:
          return renderSetting(fromBinary(SessionSettingEventSchema, event.payload));
        case EventKind.CONTEXT_CONTRIBUTION: {
          const e = fromBinary(ContextContributionEventSchema, event.payload);
          const children = e.sections.map((s) =>
            collapsible(`${s.label} (${s.tokens} tokens)`, blockNodes(s.content)),
          );
          // Older events carry no notes: their drops were all for the budget.
          if (e.notes.length > 0) for (const n of e.notes) children.push(text(n, TextStyle.WARNING));
          else
            for (const l of e.droppedLabels)
              children.push(text(`dropped: ${l} (over budget)`, TextStyle.WARNING));
          const used = e.sections.reduce((n, s) => n + Number(s.tokens), 0);
          const budget = e.tokenBudget > 0n ? ` — ${used}/${e.tokenBudget} tokens` : "";
          return collapsible(`Context from ${event.producer.name}${budget}`, children);
        }
        case EventKind.MEMORY_WRITE:
        case EventKind.MEMORY_UPDATE:
        case EventKind.MEMORY_DELETE:
          return renderMemoryChange(event.kind, fromBinary(MemoryMutationEventSchema, event.payload));
        case EventKind.HOOK_ERROR: {
          const e = fromBinary(HookErrorEventSchema, event.payload).error;
          const cat = e ? (HookErrorCategory[e.category]?.toLowerCase() ?? "unknown") : "unknown";
          return text(
            `hook ${e?.subscriber?.name ?? "?"} failed (${cat}${e?.timedOut ? ", timed out" : ""}): ${e?.message ?? ""}`,
            TextStyle.ERROR,
          );
        }
        default:
          return text(`(${event.kindText} event)`, TextStyle.DIM);
      }
    } catch (err) {
      return text(
        `(${event.kindText} event could not be decoded: ${(err as Error).message})`,
        TextStyle.WARNING,
      );
    }
  })();
  return create(RenderTreeSchema, root ? { root } : {});
}

/** Whether a rendered tree shows anything. */
export function hasContent(tree: RenderTree | undefined): boolean {
  return tree?.root?.node.case !== undefined;
}

export function placed(tree: RenderTree, region: Region = Region.MAIN_CHAT): PlacedContent {
  return create(PlacedContentSchema, { region, content: tree, replace: false });
}

export {
  isLargeInput,
  LARGE_INPUT_BYTES,
  StoredInputs,
  storedPlanEvent,
  storedToolCallEvent,
} from "./stored-inputs.ts";
