// Tool calls the operator makes without a model turn: a DISPATCH_DIRECT_INVOKE slash
// command or an action trigger (an ActionNode activated in a frontend). The call goes
// through the same gate as a model's call (pre-tool-call, policy, plan-ready and asks
// for a resource, apply per ConcurrencySpec, post-tool-call, post-apply); no model is
// asked anything. The model learns about it on its next turn from a user-role message
// saying what the operator ran and what came back: the history never gets a tool_use
// the model did not emit.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { type ToolUseBlock, ToolUseBlockSchema } from "@pluggableharness/protocol/content";
import { budgetToolInput } from "../../domain/index.ts";
import type { SessionChannel } from "../../frontends/channel.ts";
import type { LoopDeps } from "../deps.ts";
import { type CallRecord, resultText } from "../gate/call.ts";
import { CallGate } from "../gate/gate.ts";
import type { CallContext, TurnPorts } from "../ports.ts";
import type { DirectInvocation } from "./direct-invocation.ts";
import type { SessionLog } from "./session-log.ts";

/** What an operator's call reads and writes of its session. */
export interface DirectInvokeSession {
  readonly id: string;
  readonly ports: TurnPorts;
  readonly log: Pick<SessionLog, "appendUserMessage" | "commit">;
  readonly channel: Pick<SessionChannel, "publish">;
  readonly rewind: PendingRewind;
  callContext(turnId: string, signal: AbortSignal): CallContext;
}

export type { DirectInvocation, DirectInvokeOutcome, InvocationOrigin } from "./direct-invocation.ts";

/** The synthetic_reason of the message that tells the model about the call. */
export const DIRECT_INVOKE_REASON = "direct_invoke";

export type ArgumentMapping =
  | { readonly ok: true; readonly value: JsonObject }
  | { readonly ok: false; readonly error: string };

const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Splits like a shell would, minus everything but quoting: "a b" and 'a b' are one word. */
function words(text: string): string[] | undefined {
  const out: string[] = [];
  let current = "";
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === "\\" && quote === '"' && i + 1 < text.length) current += text[++i];
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) out.push(current);
      current = "";
      inWord = false;
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (quote) return undefined;
  if (inWord) out.push(current);
  return out;
}

function propertiesOf(schema: JsonObject): Record<string, JsonObject> {
  const props = schema["properties"];
  return props && typeof props === "object" && !Array.isArray(props)
    ? (props as Record<string, JsonObject>)
    : {};
}

/** A `key=value` value read as the property's declared type. */
function typedValue(raw: string, prop: JsonObject): { value: JsonValue } | { error: string } {
  switch (prop["type"]) {
    case "string":
      return { value: raw };
    case "integer":
    case "number": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) return { error: `"${raw}" is not a number` };
      return { value: n };
    }
    case "boolean":
      if (raw === "true" || raw === "false") return { value: raw === "true" };
      return { error: `"${raw}" is not true or false` };
    default:
      try {
        return { value: JSON.parse(raw) as JsonValue };
      } catch {
        return { error: `"${raw}" is not JSON (lists and objects are written as JSON)` };
      }
  }
}

/** The one string property a bare text can fill: the only required one, else the only one. */
function soleStringField(schema: JsonObject): string | undefined {
  const props = propertiesOf(schema);
  const required = Array.isArray(schema["required"]) ? (schema["required"] as string[]) : [];
  const candidates = required.length > 0 ? required : Object.keys(props);
  if (candidates.length !== 1) return undefined;
  return props[candidates[0]!]?.["type"] === "string" ? candidates[0] : undefined;
}

function usage(schema: JsonObject): string {
  const names = Object.keys(propertiesOf(schema));
  const pairs = names.length > 0 ? names.map((n) => `${n}=…`).join(" ") : "key=value";
  return `write ${pairs}, or a JSON object`;
}

/**
 * A slash command's raw argument text as the tool's input. In order: nothing is `{}`;
 * text starting with `{` is a JSON object; words that are all `key=value` with declared
 * keys become those properties (values read as the property's type; quote a value that
 * has spaces); any other text fills the tool's one string field (its only required
 * property, else its only property) whole. Anything else is an error saying what to write.
 * The result is not yet checked against the schema.
 */
export function commandArguments(text: string, schema: JsonObject): ArgumentMapping {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: true, value: {} };
  if (trimmed.startsWith("{")) {
    try {
      const v = JSON.parse(trimmed) as JsonValue;
      if (v && typeof v === "object" && !Array.isArray(v)) return { ok: true, value: v as JsonObject };
    } catch {
      // reported below
    }
    return { ok: false, error: "the arguments start with { but are not a JSON object" };
  }
  const props = propertiesOf(schema);
  const split = words(trimmed);
  if (split === undefined) return { ok: false, error: "a quote is not closed" };
  const pairs = split.map((w) => {
    const eq = w.indexOf("=");
    return eq > 0 ? { key: w.slice(0, eq), raw: w.slice(eq + 1) } : undefined;
  });
  if (pairs.every((p) => p !== undefined && KEY.test(p.key) && Object.hasOwn(props, p.key))) {
    const value: JsonObject = {};
    for (const p of pairs) {
      const { key, raw } = p!;
      if (Object.hasOwn(value, key)) return { ok: false, error: `${key} is given twice` };
      const typed = typedValue(raw, props[key]!);
      if ("error" in typed) return { ok: false, error: `${key}: ${typed.error}` };
      value[key] = typed.value;
    }
    return { ok: true, value };
  }
  const field = soleStringField(schema);
  if (field !== undefined) return { ok: true, value: { [field]: trimmed } };
  return { ok: false, error: `cannot map "${trimmed}" to the tool's input; ${usage(schema)}` };
}

/**
 * Whether the model is told about the call. A slash command running an operator-only
 * tool (/cost, /sessions, /model…) is the operator working the harness's controls: its
 * answer is for them, and whatever it changes reaches the model by its own road (the
 * tool list, the model choice), so the result stays out of the conversation. One running
 * a tool the model could call itself (a project's /test running exec.bash) is reported,
 * as are action triggers and MCP clients' calls.
 */
export function reportsToModel(inv: DirectInvocation): boolean {
  return !(inv.origin.kind === "slash_command" && inv.tool.tool.schema.operatorOnly);
}

/** The history message text: what the operator ran, with what, and what came back. */
export function invocationReport(inv: DirectInvocation, call: CallRecord): string {
  const how =
    inv.origin.kind === "slash_command"
      ? `ran the slash command /${inv.origin.name}${inv.origin.args.trim() ? ` ${inv.origin.args.trim()}` : ""}`
      : inv.origin.kind === "mcp_client"
        ? `called a tool from the MCP client "${inv.origin.client}"`
        : `activated the action "${inv.origin.nodeId}"`;
  const { content, isError } = resultText(call, false);
  return [
    `[kernel] The operator ${how} directly, without a model turn. It called ${inv.tool.declaredName} with ${JSON.stringify(budgetToolInput(inv.args))}.`,
    `Result${isError ? " (error)" : ""}: ${content}`,
  ].join("\n");
}

/**
 * Runs one operator call through the gate and appends its report to the history.
 * Answers "cancelled" when interrupted (the call then has a cancelled result, reported too).
 */
export async function runDirectInvocation(
  deps: LoopDeps,
  session: DirectInvokeSession,
  inv: DirectInvocation,
  signal: AbortSignal,
): Promise<"ok" | "cancelled"> {
  const turnId = deps.newId();
  deps.trace({ name: "direct.begin", sessionId: session.id, turnId, attrs: { tool: inv.tool.declaredName } });
  // Kept in memory for the gate's bookkeeping only; it never enters the history.
  const block: ToolUseBlock = create(ToolUseBlockSchema, {
    id: deps.newId(),
    name: inv.tool.declaredName,
    input: inv.args,
  });
  const call: CallRecord = {
    index: 0,
    block,
    tool: inv.tool,
    args: inv.args,
    // Session.invoke checked them against the input schema before queueing the call.
    argumentsChecked: true,
    resultPersisted: false,
    hookable: true,
  };
  const gate = new CallGate(deps, session.callContext(turnId, signal), session.ports, {
    calls: [call],
    serializeAll: false,
    trace: (step) => deps.trace({ name: "step", sessionId: session.id, turnId, step }),
  });
  // Only an operator's own call may use the session controls (ControlSession); an MCP
  // client's call is a client's, not the operator's.
  const endOperator =
    inv.origin.kind === "mcp_client"
      ? () => {}
      : deps.tracker.beginOperator(inv.tool.provider.name, session.id);
  let outcome: Awaited<ReturnType<CallGate["run"]>>;
  try {
    outcome = await gate.run();
  } finally {
    endOperator();
  }
  if (outcome === "cancelled") gate.cancelRemaining();
  if (inv.onDone) {
    const r = call.result;
    const text = r ? resultText(call, false) : { content: "cancelled before it ran", isError: true };
    inv.onDone({
      content: text.content,
      isError: text.isError,
      denied: r?.denied === true,
      cancelled: outcome === "cancelled",
      ...(r?.outcome.kind === "result" ? { payload: r.outcome.payload } : {}),
    });
  }
  if (reportsToModel(inv))
    session.log.appendUserMessage(
      turnId,
      [
        {
          $typeName: "pluggableharness.content.v1.ContentBlock",
          block: {
            case: "text",
            value: { $typeName: "pluggableharness.content.v1.TextBlock", text: invocationReport(inv, call) },
          },
        },
      ],
      DIRECT_INVOKE_REASON,
    );
  const rewound = session.rewind.take();
  if (rewound) {
    // After the command's result, so every frontend shows what was done before it moves on
    // (the result is published already; committed here, before the fork is announced).
    session.log.commit();
    session.channel.publish({
      event: {
        case: "sessionRewound",
        value: {
          forkSessionId: rewound.forkId,
          promptText: rewound.promptText,
          anchorMessageId: rewound.anchorMessageId,
        },
      },
    });
  }
  return outcome;
}

/** Where the operator's command rewound the session to (the fork and the prompt it goes on from). */
export interface RewindTarget {
  readonly forkId: string;
  readonly promptText: string;
  readonly anchorMessageId: string;
}

/**
 * A rewind the operator's command made (callbacks/rewind.ts marks it): once the command's
 * call is over, invokeDirect takes it and tells every subscriber to go on in the fork.
 */
export class PendingRewind {
  #target: RewindTarget | undefined;

  mark(target: RewindTarget): void {
    this.#target = target;
  }

  /** The rewind not yet announced, if any. */
  get current(): RewindTarget | undefined {
    return this.#target;
  }

  /** The rewind to announce now, cleared so it is announced once. */
  take(): RewindTarget | undefined {
    const t = this.#target;
    this.#target = undefined;
    return t;
  }
}
