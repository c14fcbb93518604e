// Checks a Messages request the way the real API would reject it (400 invalid_request_error).
// Only rules we are confident the vendor enforces are here; each is listed in the README.
import type { RecordedRequest, Rejection } from "../types.ts";
import { anthropicImageLimitProblem, imageProblem } from "./images.ts";
import { claudeRefusesSampling } from "./models.ts";

type Json = Record<string, unknown>;

const BLOCK_TYPES = [
  "text",
  "image",
  "document",
  "search_result",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "mcp_tool_use",
  "mcp_tool_result",
  "container_upload",
];

const reject = (message: string): Rejection => ({ status: 400, errorType: "invalid_request_error", message });

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function blocksOf(message: Json): Json[] {
  return Array.isArray(message.content) ? (message.content.filter(isObject) as Json[]) : [];
}

/** The Messages API refuses empty and whitespace-only text blocks, wherever they sit. */
function textProblem(text: unknown): string | undefined {
  if (typeof text !== "string") return undefined;
  if (text === "") return "messages: text content blocks must be non-empty";
  if (text.trim() === "") return "messages: text content blocks must contain non-whitespace text";
  return undefined;
}

export function validateAnthropic(request: RecordedRequest): Rejection | undefined {
  if (request.headers["anthropic-version"] === undefined)
    return reject("anthropic-version: header is required");
  const body = request.json;
  if (!isObject(body)) return reject("There was an error parsing the body of your request as JSON.");
  if (typeof body.model !== "string") return reject("model: Field required");
  if (body.max_tokens === undefined) return reject("max_tokens: Field required");
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 0)
    return reject("max_tokens: Input should be a valid integer greater than or equal to 0");
  if (!Array.isArray(body.messages)) return reject("messages: Field required");
  if (claudeRefusesSampling(body.model)) {
    for (const key of ["temperature", "top_p", "top_k"])
      if (body[key] !== undefined) return reject(`\`${key}\` is deprecated for this model.`);
  }

  const thinking = body.thinking;
  const thinkingOn = isObject(thinking) && (thinking.type === "enabled" || thinking.type === "adaptive");
  // max_tokens 0 pre-warms the cache; it does not combine with streaming or thinking.
  if (body.max_tokens === 0 && (body.stream === true || thinkingOn))
    return reject(
      "`max_tokens: 0` (cache pre-warming) cannot be combined with streaming or extended thinking.",
    );
  const betas = String(request.headers["anthropic-beta"] ?? "")
    .split(",")
    .map((b) => b.trim());
  if (isObject(thinking) && thinking.type === "enabled") {
    const budget = thinking.budget_tokens;
    if (typeof budget !== "number") return reject("thinking.enabled.budget_tokens: Field required");
    if (budget < 1024)
      return reject("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    // With interleaved thinking the budget spans the whole turn and may exceed max_tokens.
    if (budget >= (body.max_tokens as number) && !betas.includes("interleaved-thinking-2025-05-14"))
      return reject("`max_tokens` must be greater than `thinking.budget_tokens`.");
  }

  // Cache markers: at most four, never on an empty text block.
  const markable: Json[] = [
    ...(Array.isArray(body.tools) ? body.tools.filter(isObject) : []),
    ...(Array.isArray(body.system) ? body.system.filter(isObject) : []),
    ...(Array.isArray(body.messages) ? (body.messages.filter(isObject) as Json[]).flatMap(blocksOf) : []),
  ];
  const markers = markable.filter((b) => b.cache_control !== undefined && b.cache_control !== null);
  if (markers.length > 4)
    return reject(`A maximum of 4 blocks with cache_control may be provided. Found ${markers.length}.`);
  if (markers.some((b) => b.type === "text" && b.text === ""))
    return reject("cache_control cannot be set for empty text blocks");

  if (Array.isArray(body.tools)) {
    for (const [i, tool] of body.tools.entries()) {
      if (!isObject(tool)) return reject(`tools.${i}: Input should be a valid dictionary`);
      const custom = tool.type === undefined || tool.type === "custom";
      if (custom && typeof tool.name !== "string") return reject(`tools.${i}.custom.name: Field required`);
      if (custom && !isObject(tool.input_schema))
        return reject(`tools.${i}.custom.input_schema: Field required`);
    }
  }

  const messages = body.messages as unknown[];
  // Images anywhere in the request (top level and inside tool results): the many-images rule.
  const imageCount = (messages.filter(isObject) as Json[]).flatMap(blocksOf).reduce((n, b) => {
    if (b.type === "image") return n + 1;
    if (b.type !== "tool_result" || !Array.isArray(b.content)) return n;
    return n + (b.content as unknown[]).filter((c) => isObject(c) && c.type === "image").length;
  }, 0);
  for (const [i, m] of messages.entries()) {
    if (!isObject(m)) return reject(`messages.${i}: Input should be a valid dictionary`);
    if (m.role !== "user" && m.role !== "assistant")
      return reject(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content !== "string" && !Array.isArray(m.content))
      return reject(`messages.${i}.content: Input should be a valid string or list`);
    for (const [j, block] of blocksOf(m).entries()) {
      const type = block.type;
      if (typeof type !== "string" || !BLOCK_TYPES.includes(type))
        return reject(
          `messages.${i}.content.${j}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${BLOCK_TYPES.map((t) => `'${t}'`).join(", ")}`,
        );
      if (type === "thinking" && typeof block.signature !== "string")
        return reject(`messages.${i}.content.${j}.thinking.signature: Field required`);
      if (type === "redacted_thinking" && typeof block.data !== "string")
        return reject(`messages.${i}.content.${j}.redacted_thinking.data: Field required`);
      if (type === "tool_use" && (typeof block.id !== "string" || typeof block.name !== "string"))
        return reject(`messages.${i}.content.${j}.tool_use.id: Field required`);
      if (type === "tool_result" && typeof block.tool_use_id !== "string")
        return reject(`messages.${i}.content.${j}.tool_result.tool_use_id: Field required`);
      const images =
        type === "image"
          ? [block]
          : type === "tool_result" && Array.isArray(block.content)
            ? (block.content as unknown[]).filter((c): c is Json => isObject(c) && c.type === "image")
            : [];
      if (type === "tool_result" && Array.isArray(block.content)) {
        for (const [k, c] of (block.content as unknown[]).entries()) {
          const t = isObject(c) ? c.type : undefined;
          if (!["text", "image", "search_result", "document"].includes(String(t)))
            return reject(
              `messages.${i}.content.${j}.tool_result.content.${k}: Input tag '${String(t)}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'`,
            );
        }
      }
      for (const im of images) {
        const src = isObject(im.source) ? im.source : undefined;
        if (src?.type === "url" && typeof src.url === "string") continue;
        if (src?.type !== "base64") return reject(`messages.${i}.content.${j}.image.source: Field required`);
        const problem =
          imageProblem(src.media_type, src.data) ?? anthropicImageLimitProblem(String(src.data), imageCount);
        if (problem) return reject(`messages.${i}.content.${j}.image.source.base64: ${problem}`);
      }
      const texts =
        type === "text"
          ? [block]
          : type === "tool_result" && Array.isArray(block.content)
            ? (block.content as unknown[]).filter((c): c is Json => isObject(c) && c.type === "text")
            : [];
      for (const t of texts) {
        const problem = textProblem(t.text);
        if (problem) return reject(problem);
      }
    }
  }

  // Tool pairing: every tool_use is answered in the very next message, and every tool_result
  // answers a tool_use from the message right before it.
  for (const [i, m] of (messages as Json[]).entries()) {
    const uses = blocksOf(m)
      .filter((b) => b.type === "tool_use")
      .map((b) => b.id as string);
    const next = messages[i + 1] as Json | undefined;
    if (m.role === "assistant" && uses.length > 0 && next) {
      const answered = new Set(
        blocksOf(next)
          .filter((b) => b.type === "tool_result")
          .map((b) => b.tool_use_id),
      );
      const missing = uses.filter((id) => !answered.has(id));
      if (missing.length > 0)
        return reject(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
    }
    if (m.role === "user") {
      const prev = messages[i - 1] as Json | undefined;
      const offered = new Set(
        prev?.role === "assistant"
          ? blocksOf(prev)
              .filter((b) => b.type === "tool_use")
              .map((b) => b.id)
          : [],
      );
      // Results come first: text before a tool_result in that message is refused.
      const blocks = blocksOf(m);
      const firstOther = blocks.findIndex((b) => b.type !== "tool_result");
      const lastResult = blocks.map((b) => b.type).lastIndexOf("tool_result");
      if (offered.size > 0 && firstOther >= 0 && firstOther < lastResult)
        return reject(
          `messages.${i}: \`tool_result\` blocks must come first in the content of the message that answers \`tool_use\` blocks; found ${String(blocks[firstOther]!.type)} at content.${firstOther} before a \`tool_result\``,
        );
      for (const [j, b] of blocks.entries()) {
        if (b.type === "tool_result" && !offered.has(b.tool_use_id))
          return reject(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
      }
    }
  }
  return undefined;
}
