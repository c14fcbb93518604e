// Checks a generateContent request the way the Gemini API would reject it (400 INVALID_ARGUMENT).
import type { RecordedRequest, Rejection } from "../types.ts";
import { imageProblem } from "./images.ts";
import { geminiRequiresSignatures } from "./models.ts";

type Json = Record<string, unknown>;

const DATA_FIELDS = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult",
];
const PART_FIELDS = new Set([
  ...DATA_FIELDS,
  "thought",
  "thoughtSignature",
  "videoMetadata",
  "partMetadata",
  "mediaResolution",
]);

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const bad = (message: string): Rejection => ({ status: 400, errorType: "INVALID_ARGUMENT", message });

export function validateGemini(request: RecordedRequest): Rejection | undefined {
  const body = request.json;
  if (!isObject(body)) return bad("Invalid JSON payload received.");
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return bad("* GenerateContentRequest.contents: contents is not specified\n");
  for (const [i, c] of body.contents.entries()) {
    if (!isObject(c)) return bad(`Invalid JSON payload received. Invalid value at 'contents[${i}]'`);
    if (c.role !== undefined && c.role !== "user" && c.role !== "model" && c.role !== "function")
      return bad("Please use a valid role: user, model.");
    if (!Array.isArray(c.parts) || c.parts.length === 0)
      return bad(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    for (const [j, p] of c.parts.entries()) {
      if (!isObject(p))
        return bad(`Invalid JSON payload received. Invalid value at 'contents[${i}].parts[${j}]'`);
      for (const key of Object.keys(p))
        if (!PART_FIELDS.has(key))
          return bad(
            `Invalid JSON payload received. Unknown name "${key}" at 'contents[${i}].parts[${j}]': Cannot find field.`,
          );
      const data = DATA_FIELDS.filter((k) => p[k] !== undefined);
      if (data.length !== 1)
        return bad(
          `* GenerateContentRequest.contents[${i}].parts[${j}].data: required oneof field 'data' must have one initialized field\n`,
        );
      if (p.inlineData !== undefined) {
        const d = isObject(p.inlineData) ? p.inlineData : {};
        if (String(d.mimeType ?? "").startsWith("image/")) {
          const problem = imageProblem(d.mimeType, d.data);
          if (problem)
            return bad(`* GenerateContentRequest.contents[${i}].parts[${j}].inline_data: ${problem}\n`);
        }
      }
      if (isObject(p.functionResponse) && typeof p.functionResponse.name !== "string")
        return bad(
          `* GenerateContentRequest.contents[${i}].parts[${j}].function_response.name: Name cannot be empty.\n`,
        );
    }
  }
  // Function calling turns: a call turn follows a user (or function response) turn, and the
  // very next turn answers each of its calls with one functionResponse part.
  const count = (c: unknown, field: string) =>
    isObject(c) && Array.isArray(c.parts)
      ? c.parts.filter((p) => isObject(p) && p[field] !== undefined).length
      : 0;
  for (const [i, c] of body.contents.entries()) {
    const calls = count(c, "functionCall");
    const responses = count(c, "functionResponse");
    const prev = i > 0 ? (body.contents[i - 1] as Json) : undefined;
    if (calls > 0 && prev?.role === "model")
      return bad(
        "Please ensure that function call turns come immediately after a user turn or after a function response turn.",
      );
    if (responses > 0 && count(prev, "functionCall") === 0)
      return bad("Please ensure that function response turn comes immediately after a function call turn.");
    if (
      calls > 0 &&
      i + 1 < body.contents.length &&
      count(body.contents[i + 1], "functionResponse") !== calls
    )
      return bad(
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
      );
  }
  const signatures = signatureProblem(request.model ?? "", body.contents as Json[]);
  if (signatures) return bad(signatures);
  if (
    body.cachedContent !== undefined &&
    (body.systemInstruction !== undefined || body.tools !== undefined || body.toolConfig !== undefined)
  )
    return bad(
      "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.",
    );
  const config = isObject(body.generationConfig) ? body.generationConfig : undefined;
  const thinking = config && isObject(config.thinkingConfig) ? config.thinkingConfig : undefined;
  if (thinking && thinking.thinkingBudget !== undefined && thinking.thinkingLevel !== undefined)
    return bad("You can only set one of thinking budget and thinking level.");
  return undefined;
}

/**
 * Gemini 3: in the current turn (the contents after the last user content that is more
 * than function responses), the first functionCall of every model content must carry its
 * thoughtSignature; earlier turns are not checked.
 */
function signatureProblem(model: string, contents: Json[]): string | undefined {
  if (!geminiRequiresSignatures(model)) return undefined;
  const parts = (c: Json) => (Array.isArray(c.parts) ? (c.parts as unknown[]).filter(isObject) : []);
  let start = 0;
  for (const [i, c] of contents.entries()) {
    if (c.role !== "model" && parts(c).some((p) => p.functionResponse === undefined)) start = i;
  }
  for (let i = start; i < contents.length; i++) {
    const c = contents[i]!;
    if (c.role !== "model") continue;
    const first = parts(c).find((p) => p.functionCall !== undefined);
    if (first && typeof first.thoughtSignature !== "string") {
      const name = isObject(first.functionCall) ? String(first.functionCall.name) : "";
      return `Function call \`${name}\` in the \`${i}.\` content block is missing a \`thought_signature\`. Learn more: https://ai.google.dev/gemini-api/docs/thought-signatures`;
    }
  }
  return undefined;
}
