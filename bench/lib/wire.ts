// Vendor-neutral reading of a recorded model request: which tools the harness declared,
// how many tool results it is sending back, and the text of those results. Each harness
// speaks one of three wire formats (Anthropic Messages, OpenAI Responses, Chat Completions).
import type { RecordedRequest } from "@pluggableharness/fake-vendors";

type Json = Record<string, unknown>;

const MODEL_ENDPOINTS = new Set(["messages", "responses", "chat", "gemini"]);

export function isModelRequest(r: RecordedRequest): boolean {
  return MODEL_ENDPOINTS.has(r.endpoint);
}

function body(r: RecordedRequest): Json {
  return (r.json && typeof r.json === "object" ? r.json : {}) as Json;
}

function array(v: unknown): Json[] {
  return Array.isArray(v) ? (v.filter((x) => x && typeof x === "object") as Json[]) : [];
}

/** Tool names the request declares (function tools; hosted tools by their type). */
export function declaredTools(r: RecordedRequest): string[] {
  const names: string[] = [];
  for (const t of array(body(r)["tools"])) {
    const fn = t["function"] as Json | undefined;
    const name = (t["name"] ?? fn?.["name"] ?? t["type"]) as unknown;
    if (typeof name === "string") names.push(name);
  }
  return names;
}

interface ToolResult {
  text: string;
  isError: boolean;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return array(content)
    .map((b) =>
      typeof b["text"] === "string" ? b["text"] : typeof b["output"] === "string" ? b["output"] : "",
    )
    .join("");
}

/** Every tool result carried in the request's history, oldest first. */
export function toolResults(r: RecordedRequest): ToolResult[] {
  const b = body(r);
  const out: ToolResult[] = [];
  if (r.endpoint === "messages") {
    for (const m of array(b["messages"])) {
      for (const block of array(m["content"])) {
        if (block["type"] === "tool_result") {
          out.push({ text: textOf(block["content"]), isError: block["is_error"] === true });
        }
      }
    }
  } else if (r.endpoint === "responses") {
    for (const item of array(b["input"])) {
      const type = item["type"];
      if (type === "function_call_output" || type === "custom_tool_call_output") {
        const o = item["output"];
        out.push({ text: typeof o === "string" ? o : textOf(o), isError: false });
      }
    }
  } else if (r.endpoint === "chat") {
    for (const m of array(b["messages"])) {
      if (m["role"] === "tool") out.push({ text: textOf(m["content"]), isError: false });
    }
  }
  return out;
}
