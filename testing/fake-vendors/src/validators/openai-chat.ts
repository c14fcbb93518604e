// Checks a Chat Completions request by OpenAI's rules (compatible servers are often laxer).
import type { RecordedRequest, Rejection } from "../types.ts";
import { imageUrlProblem } from "./images.ts";
import { openaiAcceptsSampling } from "./models.ts";

type Json = Record<string, unknown>;

const ROLES = ["system", "assistant", "user", "function", "tool", "developer"];
const USER_PARTS = ["text", "image_url", "input_audio", "file"];
const ASSISTANT_PARTS = ["text", "refusal"];

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const bad = (
  message: string,
  param: string | undefined,
  code: string | undefined = undefined,
): Rejection => ({
  status: 400,
  errorType: "invalid_request_error",
  message,
  param,
  code,
});

/** DeepSeek reasons unless the request turns thinking off (`thinking: {type: "disabled"}`). */
function thinkingOn(body: Json): boolean {
  return !(isObject(body.thinking) && body.thinking.type === "disabled");
}

/**
 * DeepSeek's thinking-mode rule (its thinking-mode guide, "tool calls"): between two user
 * messages where the model called a tool, every assistant message of that stretch, the
 * final answer included, must carry its `reasoning_content` in every later request. The
 * indices of the assistant messages the rule covers.
 */
function reasoningRequired(messages: unknown[]): Set<number> {
  const required = new Set<number>();
  let span: number[] = [];
  let called = false;
  const close = () => {
    if (called) for (const i of span) required.add(i);
    span = [];
    called = false;
  };
  for (const [i, m] of messages.entries()) {
    if (!isObject(m)) continue;
    if (m.role === "user") close();
    else if (m.role === "assistant") {
      span.push(i);
      if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) called = true;
    }
  }
  close();
  return required;
}

export function validateChat(request: RecordedRequest): Rejection | undefined {
  const body = request.json;
  if (!isObject(body)) return bad("We could not parse the JSON body of your request.", undefined);
  if (typeof body.model !== "string") return bad("you must provide a model parameter", undefined);
  if (!Array.isArray(body.messages))
    return bad("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (body.messages.length === 0) return bad("[] is too short - 'messages'", "messages", "empty_array");
  const effort = typeof body.reasoning_effort === "string" ? body.reasoning_effort : undefined;
  for (const key of ["temperature", "top_p"]) {
    if (body[key] !== undefined && !openaiAcceptsSampling(body.model, effort))
      return bad(
        `Unsupported parameter: '${key}' is not supported with this model.`,
        key,
        "unsupported_parameter",
      );
  }

  const needsReasoning =
    request.vendor === "deepseek" && thinkingOn(body) ? reasoningRequired(body.messages) : new Set();
  let openCalls: Set<string> | undefined;
  for (const [i, m] of body.messages.entries()) {
    if (!isObject(m))
      return bad(`Invalid type for 'messages[${i}]': expected an object.`, `messages[${i}]`, "invalid_type");
    const role = m.role;
    if (typeof role !== "string" || !ROLES.includes(role))
      return bad(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        "invalid_value",
      );
    if (role === "tool") {
      const id = m.tool_call_id;
      if (!openCalls || typeof id !== "string" || !openCalls.has(id))
        return bad(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      openCalls.delete(id);
      // A tool message carries text only: images go in a user message.
      if (Array.isArray(m.content))
        for (const [j, part] of m.content.entries())
          if (!isObject(part) || part.type !== "text")
            return bad(
              `Invalid value: '${String(isObject(part) ? part.type : part)}'. Supported values are: 'text'.`,
              `messages[${i}].content[${j}].type`,
              "invalid_value",
            );
      continue;
    }
    if (openCalls && openCalls.size > 0)
      return bad(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...openCalls].join(", ")}`,
        "messages.[" + String(i - 1) + "].role",
      );
    openCalls = undefined;
    if (Array.isArray(m.content)) {
      const allowed = role === "assistant" ? ASSISTANT_PARTS : USER_PARTS;
      for (const [j, part] of m.content.entries()) {
        const t = isObject(part) ? part.type : undefined;
        if (typeof t !== "string" || !allowed.includes(t))
          return bad(
            `Invalid value: '${String(t)}'. Supported values are: ${allowed.map((a) => `'${a}'`).join(", ")}.`,
            `messages[${i}].content[${j}].type`,
            "invalid_value",
          );
        if (t === "image_url") {
          const url = isObject(part) && isObject(part.image_url) ? part.image_url.url : undefined;
          const problem = imageUrlProblem(url);
          if (problem)
            return bad(
              `Invalid image: ${problem}.`,
              `messages[${i}].content[${j}].image_url.url`,
              "invalid_value",
            );
        }
      }
    }
    if (needsReasoning.has(i) && typeof m.reasoning_content !== "string")
      return bad(
        `Missing \`reasoning_content\` field in the assistant message at message index ${i}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls`,
        undefined,
        "invalid_request_error",
      );
    if (role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      openCalls = new Set(m.tool_calls.filter(isObject).map((c) => String(c.id)));
    }
  }
  if (openCalls && openCalls.size > 0)
    return bad(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...openCalls].join(", ")}`,
      `messages.[${body.messages.length - 1}].role`,
    );
  return undefined;
}
