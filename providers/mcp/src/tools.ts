// MCP tools as this provider's operations: how each is classified (ask by default), its
// ToolSchema, and how a call's result, progress and errors map onto ToolEvents.
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { RiskClass, ToolKind, type ToolSchemaSchema } from "@pluggableharness/protocol/tool";
import { type ErrorCategoryName, ToolFailure } from "@pluggableharness/tool-kit";
import {
  cutChars,
  cutUtf8,
  formatBytes,
  MAX_CONTENT_ENTRIES,
  MAX_DESCRIPTION_CHARS,
  truncationNote,
} from "./budget.ts";
import { CLIP_KEY, clipReportOf, type JsonPath, type ResultClipReport } from "./clip.ts";
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
  const description = cutChars(
    tool.description?.trim() || title || `The MCP tool ${tool.name}.`,
    MAX_DESCRIPTION_CHARS,
  );
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

/** How a result is turned into a payload. */
export interface PayloadOptions {
  /** The text budget (max_output_bytes). */
  readonly maxBytes: number;
  /** Masks secrets; applied before the budget, so a cut never keeps part of one. */
  readonly maskJson: <T>(value: T) => T;
}

const samePath = (a: JsonPath, b: JsonPath) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The length a string had before the transport cut it (or its length now). */
function lengthAt(clip: ResultClipReport | undefined, path: JsonPath, now: string): number {
  return clip?.cuts.find((c) => samePath(c.path, path))?.length ?? now.length;
}

/** Decoded size of base64 text of `length` characters. */
const base64Bytes = (length: number) => Math.floor((length * 3) / 4);

/** What the model reads of one item (a block, a resource's contents) and its frontend copy. */
export interface Item {
  json: JsonObject;
  text?: string;
  /** Characters of `text` the transport already cut off. */
  lost?: number;
}

function textItem(json: JsonObject, text: string, clip: ResultClipReport | undefined, path: JsonPath): Item {
  const lost = lengthAt(clip, path, text) - text.length;
  return { json, text, ...(lost > 0 ? { lost } : {}) };
}

/** A content block as the payload carries it: text kept, binary data summarized. */
function block(b: Block, clip: ResultClipReport | undefined, at: JsonPath): Item {
  switch (b.type) {
    case "text": {
      const text = String(b["text"] ?? "");
      return textItem({ type: "text", text }, text, clip, [...at, "text"]);
    }
    case "image":
    case "audio": {
      const data = String(b["data"] ?? "");
      const bytes = base64Bytes(lengthAt(clip, [...at, "data"], data));
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
        return textItem({ type: "resource", uri, text: r["text"] }, r["text"], clip, [
          ...at,
          "resource",
          "text",
        ]);
      const blob = typeof r["blob"] === "string" ? r["blob"] : "";
      const bytes = base64Bytes(lengthAt(clip, [...at, "resource", "blob"], blob));
      return {
        json: { type: "resource", uri, mime_type: String(r["mimeType"] ?? ""), bytes },
        text: `[resource: ${uri}]`,
      };
    }
    default:
      return { json: { type: String(b.type) } };
  }
}

/**
 * Items' text joined by newlines within `maxBytes`, with the note when anything was cut
 * here or on the way in, and each item's JSON for frontends with its text cut the same way.
 * `dropped` is how many items the transport left out altogether.
 */
export function budgetItems(
  items: readonly Item[],
  maxBytes: number,
  dropped = 0,
): { text: string; json: JsonValue[] } {
  const texts: string[] = [];
  const json: JsonValue[] = [];
  let used = 0;
  let total = 0;
  let cut = false;
  let approximate = false;
  let hidden = 0;
  for (const item of items) {
    let entry = item.json;
    if (item.text !== undefined) {
      const sep = texts.length > 0 ? 1 : 0;
      const size = Buffer.byteLength(item.text);
      total += size + sep + (item.lost ?? 0);
      if (item.lost) approximate = true;
      const room = maxBytes - used - sep;
      const c = room > 0 ? cutUtf8(item.text, room) : { text: "", cut: size > 0 };
      if (room > 0) {
        texts.push(c.text);
        used += sep + Buffer.byteLength(c.text);
      }
      if (c.cut || item.lost) {
        cut = true;
        // The frontend copy holds what the model read of it.
        entry = { ...entry, truncated: true };
        if (typeof entry["text"] === "string") entry["text"] = c.text;
      }
    }
    if (json.length < MAX_CONTENT_ENTRIES) json.push(entry);
    else hidden++;
  }
  if (hidden > 0) json.push({ type: "omitted", count: hidden });
  let text = texts.join("\n");
  if (cut || dropped > 0) {
    text += truncationNote({ kept: used, total, approximate, droppedItems: dropped, limit: maxBytes });
  }
  return { text, json };
}

/** How many elements the transport left out of the array at `path`. */
function droppedAt(clip: ResultClipReport | undefined, path: JsonPath): number {
  return clip?.drops.filter((d) => samePath(d.path, path)).reduce((n, d) => n + d.count, 0) ?? 0;
}

/** Whether the transport cut or left out anything under the result's member `root`. */
export function clippedUnder(clip: ResultClipReport | undefined, root: string): boolean {
  return !!clip && (clip.cuts.some((c) => c.path[0] === root) || clip.drops.some((d) => d.path[0] === root));
}

export function contentPayload(
  content: readonly Block[],
  maxBytes: number,
  clip?: ResultClipReport,
): { text: string; content: JsonValue[] } {
  const items = content.map((b, i) => block(b, clip, ["content", i]));
  const { text, json } = budgetItems(items, maxBytes, droppedAt(clip, ["content"]));
  return { text, content: json };
}

/** A tools/call result: the payload, or the ToolFailure an isError result is. */
export function resultPayload(
  raw: {
    content?: unknown;
    structuredContent?: unknown;
    isError?: boolean;
    toolResult?: unknown;
  },
  options: PayloadOptions,
): JsonObject {
  const clip = clipReportOf(raw as Record<string, unknown>);
  const { [CLIP_KEY]: _, ...unmasked } = raw as Record<string, unknown>;
  const result = options.maskJson(unmasked) as typeof raw;
  const content = Array.isArray(result.content) ? (result.content as Block[]) : [];
  let { text, content: blocks } = contentPayload(content, options.maxBytes, clip);
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
    // Kept only whole (a cut object may not match the tool's schema any more) and within
    // the budget; the model is told when it is left out.
    const sc = result.structuredContent as JsonObject;
    const size = clippedUnder(clip, "structuredContent") ? undefined : Buffer.byteLength(JSON.stringify(sc));
    if (size !== undefined && size <= options.maxBytes) payload["structured_content"] = sc;
    else {
      const why =
        size === undefined
          ? "it was larger than the bridge reads of one message"
          : `${formatBytes(size)} bytes, over max_output_bytes = ${formatBytes(options.maxBytes)}`;
      text += `\n[structured content left out: ${why}. Ask the tool for a smaller part if you need it.]`;
      payload["text"] = text;
    }
  } else if (content.length === 0 && result.toolResult !== undefined) {
    // A server of the 2024-10 protocol.
    const legacy =
      typeof result.toolResult === "string" ? result.toolResult : JSON.stringify(result.toolResult);
    const item =
      typeof result.toolResult === "string"
        ? textItem({}, legacy, clip, ["toolResult"])
        : { json: {}, text: legacy, ...(clippedUnder(clip, "toolResult") ? { lost: 1 } : {}) };
    payload["text"] = budgetItems([item], options.maxBytes).text;
  }
  return payload;
}

/** A JSON-RPC or transport failure as a ToolError category. */
export function failureOf(err: unknown, mask: (s: string) => string, maxBytes = 64 * 1024): ToolFailure {
  const full = mask((err as Error)?.message ?? String(err));
  const cut = cutUtf8(full, maxBytes);
  const message = cut.cut
    ? `${cut.text}\n[truncated: the message had ${formatBytes(cut.bytes)} bytes]`
    : full;
  if (err instanceof ToolFailure) {
    return new ToolFailure(err.category, message, {
      retryable: err.retryable,
      ...(err.details ? { details: err.details } : {}),
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
