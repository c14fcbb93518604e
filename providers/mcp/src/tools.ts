// MCP tools as this provider's operations: how each is classified (ask by default), its
// ToolSchema, and how a call's result, progress and errors map onto ToolEvents.
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { RiskClass, ToolKind, type ToolSchemaSchema } from "@pluggableharness/protocol/tool";
import { type ErrorCategoryName, ToolFailure } from "@pluggableharness/tool-kit";
import type { Settings } from "./config.ts";
import { toWire, type WireSchema } from "./schema.ts";

export type ToolSchemaInit = MessageInitShape<typeof ToolSchemaSchema>;

/** The kernel's deadline sits past the bridge's own, so the bridge reports a classified timeout first. */
const DEADLINE_MARGIN_MS = 5_000;

export interface Classification {
  kind: "resource" | "data_source";
  risk: "high" | "critical" | "read_only";
  idempotent: boolean;
}

/**
 * Kind and risk: every tool is a high-risk resource (the gate asks) unless an annotation
 * makes it *more* restricted (destructiveHint → critical). readOnlyHint is the server's
 * own claim, so it makes a data source only where the operator said to trust it for this
 * server (trust_read_only_hint); idempotentHint, which would allow automatic retries, is
 * likewise only believed then.
 */
export function classify(tool: Tool, settings: Settings): Classification {
  const a = tool.annotations ?? {};
  if (settings.trustReadOnlyHint && a.readOnlyHint === true && a.destructiveHint !== true) {
    return { kind: "data_source", risk: "read_only", idempotent: true };
  }
  return {
    kind: "resource",
    risk: a.destructiveHint === true ? "critical" : "high",
    idempotent: settings.trustReadOnlyHint && a.idempotentHint === true,
  };
}

/**
 * Whether the block offers this tool (enabled_tools / disabled_tools). A tool that can only
 * run as an MCP task (execution.taskSupport = "required") is never offered: the bridge does
 * not speak the experimental tasks extension.
 */
export function offered(tool: Tool, settings: Settings): boolean {
  const name = tool.name;
  if ((tool as { execution?: { taskSupport?: string } }).execution?.taskSupport === "required") return false;
  if (settings.disabledTools.includes(name)) return false;
  return settings.enabledTools === undefined || settings.enabledTools.includes(name);
}

/** What every bridged tool's result payload looks like. */
function outputSchema(tool: Tool): WireSchema {
  const properties: NonNullable<WireSchema["properties"]> = [
    { name: "text", schema: { type: 2, description: "The result's text content, joined." } },
    {
      name: "content",
      schema: {
        type: 6,
        description: "The result's content blocks (binary data summarized, not carried).",
        items: { type: 1, properties: [], required: [] },
      },
    },
  ];
  if (tool.outputSchema) {
    properties.push({ name: "structured_content", schema: toWire(tool.outputSchema) });
  }
  return { type: 1, properties, required: ["text", "content"] };
}

export function toolSchema(tool: Tool, settings: Settings): ToolSchemaInit {
  const c = classify(tool, settings);
  const title = tool.title ?? tool.annotations?.title;
  const description = [tool.description?.trim() || title || `The MCP tool ${tool.name}.`].join("");
  const ms = settings.toolTimeoutMs + DEADLINE_MARGIN_MS;
  return {
    name: tool.name,
    kind: c.kind === "resource" ? ToolKind.RESOURCE : ToolKind.DATA_SOURCE,
    risk:
      c.risk === "critical" ? RiskClass.CRITICAL : c.risk === "high" ? RiskClass.HIGH : RiskClass.READ_ONLY,
    description,
    inputSchema: toWire(tool.inputSchema),
    outputSchema: outputSchema(tool),
    streaming: true,
    // Whether a server's tools may run side by side is unknown: one at a time.
    concurrency: { safe: false, keyFields: [] },
    defaultTimeout: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 },
    idempotent: c.idempotent,
    modelTextField: "text",
    modelOmittedFields: ["content"],
  };
}

type Block = { type: string; [k: string]: unknown };

/** A content block as the payload carries it: text kept, binary data summarized. */
function block(b: Block): { json: JsonObject; text?: string } {
  switch (b.type) {
    case "text":
      return { json: { type: "text", text: String(b["text"] ?? "") }, text: String(b["text"] ?? "") };
    case "image":
    case "audio": {
      const bytes = Math.floor((String(b["data"] ?? "").length * 3) / 4);
      const mime = String(b["mimeType"] ?? "");
      return { json: { type: b.type, mime_type: mime, bytes }, text: `[${b.type}: ${mime}, ${bytes} bytes]` };
    }
    case "resource_link":
      return {
        json: { type: "resource_link", uri: String(b["uri"] ?? ""), name: String(b["name"] ?? "") },
        text: `[resource: ${String(b["uri"] ?? "")}]`,
      };
    case "resource": {
      const r = (b["resource"] ?? {}) as Record<string, unknown>;
      const uri = String(r["uri"] ?? "");
      if (typeof r["text"] === "string")
        return { json: { type: "resource", uri, text: r["text"] }, text: r["text"] };
      return {
        json: { type: "resource", uri, mime_type: String(r["mimeType"] ?? "") },
        text: `[resource: ${uri}]`,
      };
    }
    default:
      return { json: { type: String(b.type) } };
  }
}

export function contentPayload(content: readonly Block[]): { text: string; content: JsonValue[] } {
  const texts: string[] = [];
  const out: JsonValue[] = [];
  for (const b of content) {
    const m = block(b);
    out.push(m.json);
    if (m.text !== undefined) texts.push(m.text);
  }
  return { text: texts.join("\n"), content: out };
}

/** A tools/call result: the payload, or the ToolFailure an isError result is. */
export function resultPayload(result: {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
  toolResult?: unknown;
}): JsonObject {
  const content = Array.isArray(result.content) ? (result.content as Block[]) : [];
  const { text, content: blocks } = contentPayload(content);
  if (result.isError === true) {
    // The SDK's servers report a failed input check as an error result carrying the
    // JSON-RPC code in its text.
    const category = /^MCP error -32602\b|input validation error/i.test(text)
      ? "invalid_arguments"
      : "execution_failed";
    throw new ToolFailure(category, text || "the MCP tool reported an error", {
      details: { content: blocks },
    });
  }
  const payload: JsonObject = { text, content: blocks };
  if (result.structuredContent && typeof result.structuredContent === "object") {
    payload["structured_content"] = result.structuredContent as JsonObject;
  } else if (content.length === 0 && result.toolResult !== undefined) {
    // A server of the 2024-10 protocol.
    payload["text"] =
      typeof result.toolResult === "string" ? result.toolResult : JSON.stringify(result.toolResult);
  }
  return payload;
}

/** A JSON-RPC or transport failure as a ToolError category. */
export function failureOf(err: unknown, mask: (s: string) => string): ToolFailure {
  const message = mask((err as Error)?.message ?? String(err));
  if (err instanceof ToolFailure) {
    return new ToolFailure(err.category, message, {
      retryable: err.retryable,
      ...(err.details ? { details: maskJson(err.details, mask) } : {}),
    });
  }
  if (err instanceof McpError) {
    const details = { code: err.code };
    let category: ErrorCategoryName = "unknown";
    let retryable: boolean | undefined;
    if (/output schema|structured content/i.test(err.message)) category = "execution_failed";
    else if (err.code === ErrorCode.InvalidParams)
      category = /not found|unknown tool/i.test(err.message) ? "not_found" : "invalid_arguments";
    else if (err.code === ErrorCode.MethodNotFound) category = "not_found";
    else if (err.code === ErrorCode.RequestTimeout) category = "timeout";
    else if (err.code === ErrorCode.ConnectionClosed) {
      category = "execution_failed";
      retryable = true;
    } else if (err.code === ErrorCode.InternalError || err.code === ErrorCode.InvalidRequest)
      category = "execution_failed";
    return new ToolFailure(category, message, { details, ...(retryable !== undefined ? { retryable } : {}) });
  }
  // fetch failures and HTTP statuses of a remote server.
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "number" && code >= 400) {
    const category: ErrorCategoryName =
      code === 401 || code === 403 ? "permission_denied" : code === 404 ? "not_found" : "execution_failed";
    return new ToolFailure(category, message, {
      retryable: code >= 500 || code === 429,
      details: { http_status: code },
    });
  }
  return new ToolFailure("execution_failed", message, { retryable: true });
}

/** A JSON value with every secret the block passed to the server masked. */
export function maskJson<T extends JsonValue>(value: T, mask: (s: string) => string): T {
  const text = JSON.stringify(value);
  const masked = mask(text);
  return masked === text ? value : (JSON.parse(masked) as T);
}
