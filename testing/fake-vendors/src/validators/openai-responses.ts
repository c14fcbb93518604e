// Checks a Responses request the way the real API would reject it (400 invalid_request_error).
import type { RecordedRequest, Rejection } from "../types.ts";
import { imageUrlProblem } from "./images.ts";
import { openaiAcceptsSampling } from "./models.ts";

type Json = Record<string, unknown>;

export const RESPONSES_INPUT_ITEM_TYPES = [
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "item_reference",
  "file_search_call",
  "web_search_call",
  "computer_call",
  "computer_call_output",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call",
  "custom_tool_call_output",
  "compaction",
];

const USER_PARTS = ["input_text", "input_image", "input_file", "input_audio"];
const ASSISTANT_PARTS = ["output_text", "refusal"];

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (values: string[]) => values.map((v) => `'${v}'`).join(", ");

function invalidValue(value: unknown, supported: string[], param: string): Rejection {
  return {
    status: 400,
    errorType: "invalid_request_error",
    code: "invalid_value",
    param,
    message: `Invalid value: '${String(value)}'. Supported values are: ${list(supported)}.`,
  };
}

function missing(param: string): Rejection {
  return {
    status: 400,
    errorType: "invalid_request_error",
    code: "missing_required_parameter",
    param,
    message: `Missing required parameter: '${param}'.`,
  };
}

export function validateResponses(request: RecordedRequest): Rejection | undefined {
  const body = request.json;
  if (!isObject(body))
    return {
      status: 400,
      errorType: "invalid_request_error",
      message: "We could not parse the JSON body of your request.",
    };
  if (typeof body.model !== "string") return missing("model");
  const reasoning = isObject(body.reasoning) ? body.reasoning : undefined;
  const effort = typeof reasoning?.effort === "string" ? reasoning.effort : undefined;
  for (const key of ["temperature", "top_p"]) {
    if (body[key] !== undefined && !openaiAcceptsSampling(body.model, effort))
      return {
        status: 400,
        errorType: "invalid_request_error",
        code: "unsupported_parameter",
        param: key,
        message: `Unsupported parameter: '${key}' is not supported with this model.`,
      };
  }
  if (Array.isArray(body.tools)) {
    for (const [i, tool] of body.tools.entries()) {
      if (isObject(tool) && tool.type === "function" && typeof tool.name !== "string")
        return missing(`tools[${i}].name`);
    }
  }
  if (body.input === undefined || typeof body.input === "string") return undefined;
  if (!Array.isArray(body.input)) return invalidValue(typeof body.input, ["string", "array"], "input");

  const callIds = new Set<string>();
  const answered = new Set<string>();
  for (const [i, item] of body.input.entries()) {
    if (!isObject(item)) return invalidValue(typeof item, ["object"], `input[${i}]`);
    const type = item.type ?? (item.role !== undefined ? "message" : undefined);
    if (typeof type !== "string" || !RESPONSES_INPUT_ITEM_TYPES.includes(type))
      return invalidValue(type, RESPONSES_INPUT_ITEM_TYPES, `input[${i}].type`);
    switch (type) {
      case "message": {
        const role = item.role;
        if (!["user", "assistant", "system", "developer"].includes(String(role)))
          return invalidValue(role, ["user", "assistant", "system", "developer"], `input[${i}].role`);
        if (item.phase !== undefined) {
          if (role !== "assistant")
            return invalidValue(item.phase, ["(absent on non-assistant messages)"], `input[${i}].phase`);
          if (item.phase !== "commentary" && item.phase !== "final_answer")
            return invalidValue(item.phase, ["commentary", "final_answer"], `input[${i}].phase`);
        }
        if (typeof item.content === "string") break;
        if (!Array.isArray(item.content)) return missing(`input[${i}].content`);
        const allowed = role === "assistant" ? ASSISTANT_PARTS : USER_PARTS;
        for (const [j, part] of item.content.entries()) {
          const partType = isObject(part) ? part.type : undefined;
          if (typeof partType !== "string" || !allowed.includes(partType)) {
            // The real API names the two assistant kinds in prose.
            const r = invalidValue(partType, allowed, `input[${i}].content[${j}]`);
            if (role === "assistant")
              r.message = `Invalid value: '${String(partType)}'. Supported values are: 'output_text' and 'refusal'.`;
            return r;
          }
          if (partType === "input_image") {
            const problem = imageUrlProblem((part as Record<string, unknown>).image_url);
            if (problem) return invalidValue("image_url", [problem], `input[${i}].content[${j}].image_url`);
          }
        }
        break;
      }
      case "function_call":
        if (typeof item.call_id !== "string") return missing(`input[${i}].call_id`);
        if (typeof item.name !== "string") return missing(`input[${i}].name`);
        if (typeof item.arguments !== "string") return missing(`input[${i}].arguments`);
        callIds.add(item.call_id);
        break;
      case "function_call_output":
        if (typeof item.call_id !== "string") return missing(`input[${i}].call_id`);
        if (item.output === undefined) return missing(`input[${i}].output`);
        if (Array.isArray(item.output)) {
          for (const [j, part] of item.output.entries()) {
            const t = isObject(part) ? part.type : undefined;
            if (!["input_text", "input_image", "input_file"].includes(String(t)))
              return invalidValue(
                t,
                ["input_text", "input_image", "input_file"],
                `input[${i}].output[${j}].type`,
              );
            if (t === "input_image") {
              const problem = imageUrlProblem((part as Record<string, unknown>).image_url);
              if (problem) return invalidValue("image_url", [problem], `input[${i}].output[${j}].image_url`);
            }
          }
        } else if (typeof item.output !== "string")
          return invalidValue(typeof item.output, ["string", "array"], `input[${i}].output`);
        answered.add(item.call_id);
        if (body.previous_response_id === undefined && !callIds.has(item.call_id))
          return {
            status: 400,
            errorType: "invalid_request_error",
            param: "input",
            message: `No tool call found for function call output with call_id ${item.call_id}.`,
          };
        break;
      case "reasoning":
        if (!Array.isArray(item.summary)) return missing(`input[${i}].summary`);
        if (
          item.encrypted_content !== undefined &&
          item.encrypted_content !== null &&
          typeof item.encrypted_content !== "string"
        )
          return invalidValue(typeof item.encrypted_content, ["string"], `input[${i}].encrypted_content`);
        break;
    }
  }
  // Every function call in the input needs its output (the API has no way to continue
  // a call left open), unless the conversation is chained by previous_response_id.
  if (body.previous_response_id === undefined) {
    for (const id of callIds)
      if (!answered.has(id))
        return {
          status: 400,
          errorType: "invalid_request_error",
          param: "input",
          message: `No tool output found for function call ${id}.`,
        };
  }
  return undefined;
}
