import { describe, expect, it } from "vitest";
import type { RecordedRequest } from "../src/types.ts";
import { validateAnthropic } from "../src/validators/anthropic.ts";
import { validateGemini } from "../src/validators/gemini.ts";
import { validateChat } from "../src/validators/openai-chat.ts";
import { validateResponses } from "../src/validators/openai-responses.ts";

function req(
  json: unknown,
  headers: Record<string, string> = { "anthropic-version": "2023-06-01" },
): RecordedRequest {
  return { json, headers } as unknown as RecordedRequest;
}

const base = { model: "claude-sonnet-4-5", max_tokens: 2048 };
const toolTurn = [
  { role: "user", content: "weather?" },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "let me call", signature: "SIG" },
      { type: "tool_use", id: "toolu_1", name: "get_weather", input: {} },
    ],
  },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
];

describe("validateAnthropic", () => {
  it("accepts a well-formed tool round trip with signed thinking", () => {
    expect(validateAnthropic(req({ ...base, messages: toolTurn }))).toBeUndefined();
  });

  it("requires the anthropic-version header and max_tokens", () => {
    expect(validateAnthropic(req({ ...base, messages: [] }, {}))?.message).toBe(
      "anthropic-version: header is required",
    );
    expect(validateAnthropic(req({ model: "m", messages: [] }))?.message).toBe("max_tokens: Field required");
  });

  it("requires a signature on replayed thinking blocks", () => {
    const messages = structuredClone(toolTurn);
    delete (messages[1]!.content as Array<Record<string, unknown>>)[0]!.signature;
    expect(validateAnthropic(req({ ...base, messages }))?.message).toBe(
      "messages.1.content.0.thinking.signature: Field required",
    );
  });

  it("requires every tool_use to be answered in the next message", () => {
    const messages = [...toolTurn.slice(0, 2), { role: "user", content: "never mind" }];
    expect(validateAnthropic(req({ ...base, messages }))?.message).toMatch(
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
    );
  });

  it("rejects a tool_result that answers no tool_use in the previous message", () => {
    const messages = [
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", content: "x" }] },
    ];
    expect(validateAnthropic(req({ ...base, messages }))?.message).toMatch(
      /unexpected `tool_use_id` found in `tool_result` blocks: toolu_9/,
    );
  });

  it("rejects content blocks of other vendors (e.g. an OpenAI reasoning item)", () => {
    const messages = [{ role: "assistant", content: [{ type: "reasoning", summary: [] }] }];
    expect(validateAnthropic(req({ ...base, messages }))?.message).toMatch(
      /^messages\.0\.content\.0: Input tag 'reasoning'/,
    );
  });

  it("enforces thinking budget bounds", () => {
    const messages = [{ role: "user", content: "x" }];
    expect(
      validateAnthropic(req({ ...base, messages, thinking: { type: "enabled", budget_tokens: 500 } }))
        ?.message,
    ).toMatch(/1024/);
    expect(
      validateAnthropic(req({ ...base, messages, thinking: { type: "enabled", budget_tokens: 4096 } }))
        ?.message,
    ).toMatch(/max_tokens/);
    expect(validateAnthropic(req({ ...base, messages, thinking: { type: "adaptive" } }))).toBeUndefined();
  });
});

describe("validateResponses", () => {
  const ok = {
    model: "gpt-5",
    input: [
      { role: "user", content: "hi" },
      { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAA" },
      { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "done" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] },
    ],
  };

  it("accepts a well-formed history", () => {
    expect(validateResponses(req(ok))).toBeUndefined();
  });

  it("rejects unknown input item types such as an Anthropic thinking block", () => {
    const body = { model: "gpt-5", input: [{ type: "thinking", thinking: "x", signature: "s" }] };
    const r = validateResponses(req(body));
    expect(r).toMatchObject({ status: 400, param: "input[0].type", code: "invalid_value" });
    expect(r?.message).toMatch(/^Invalid value: 'thinking'\. Supported values are: 'message', /);
  });

  it("rejects input_text inside an assistant message", () => {
    const body = {
      model: "gpt-5",
      input: [{ role: "assistant", content: [{ type: "input_text", text: "x" }] }],
    };
    expect(validateResponses(req(body))?.message).toBe(
      "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.",
    );
  });

  it("rejects a function_call_output with no matching call unless chained by previous_response_id", () => {
    const body = {
      model: "gpt-5",
      input: [{ type: "function_call_output", call_id: "call_x", output: "1" }],
    };
    expect(validateResponses(req(body))?.message).toBe(
      "No tool call found for function call output with call_id call_x.",
    );
    expect(validateResponses(req({ ...body, previous_response_id: "resp_1" }))).toBeUndefined();
  });

  it("requires summary on reasoning items", () => {
    const body = { model: "gpt-5", input: [{ type: "reasoning", encrypted_content: "x" }] };
    expect(validateResponses(req(body))).toMatchObject({
      param: "input[0].summary",
      code: "missing_required_parameter",
    });
  });
});

describe("validateChat", () => {
  const call = { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } };

  it("accepts assistant tool_calls answered by tool messages", () => {
    const messages = [
      { role: "user", content: "x" },
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", tool_call_id: "call_1", content: "1" },
    ];
    expect(validateChat(req({ model: "m", messages }))).toBeUndefined();
  });

  it("rejects a tool message without a preceding tool call", () => {
    const messages = [{ role: "tool", tool_call_id: "call_1", content: "1" }];
    expect(validateChat(req({ model: "m", messages }))?.message).toMatch(
      /must be a response to a preceeding message with 'tool_calls'/,
    );
  });

  it("rejects unanswered tool calls", () => {
    const messages = [
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "user", content: "x" },
    ];
    expect(validateChat(req({ model: "m", messages }))?.message).toMatch(
      /did not have response messages: call_1$/,
    );
  });

  it("rejects unknown roles and empty message lists", () => {
    expect(validateChat(req({ model: "m", messages: [{ role: "model", content: "x" }] }))?.code).toBe(
      "invalid_value",
    );
    expect(validateChat(req({ model: "m", messages: [] }))?.message).toBe("[] is too short - 'messages'");
  });
});

describe("validateGemini", () => {
  it("accepts parts with thought signatures", () => {
    const contents = [
      { role: "user", parts: [{ text: "x" }] },
      { role: "model", parts: [{ functionCall: { name: "f", args: {} }, thoughtSignature: "S" }] },
      { role: "user", parts: [{ functionResponse: { name: "f", response: { ok: true } } }] },
    ];
    expect(validateGemini(req({ contents }))).toBeUndefined();
  });

  it("rejects unknown part fields such as an Anthropic-style type tag", () => {
    const contents = [{ role: "model", parts: [{ type: "thinking", text: "x" }] }];
    expect(validateGemini(req({ contents }))?.message).toBe(
      `Invalid JSON payload received. Unknown name "type" at 'contents[0].parts[0]': Cannot find field.`,
    );
  });

  it("rejects bad roles, empty parts and both thinking controls", () => {
    expect(validateGemini(req({ contents: [{ role: "assistant", parts: [{ text: "x" }] }] }))?.message).toBe(
      "Please use a valid role: user, model.",
    );
    expect(validateGemini(req({ contents: [{ role: "user", parts: [] }] }))?.message).toMatch(
      /must not be empty/,
    );
    const contents = [{ role: "user", parts: [{ text: "x" }] }];
    expect(
      validateGemini(
        req({ contents, generationConfig: { thinkingConfig: { thinkingBudget: 10, thinkingLevel: "low" } } }),
      )?.status,
    ).toBe(400);
  });
});

describe("tool-call pairing, as each vendor refuses a conversation left with an open call", () => {
  it("Anthropic: tool_result blocks come first in the answering message", () => {
    const messages = structuredClone(toolTurn);
    (messages[2]!.content as unknown[]).unshift({ type: "text", text: "here:" });
    expect(validateAnthropic(req({ ...base, messages }))?.message).toMatch(/must come first/);
    (messages[2]!.content as unknown[]).push((messages[2]!.content as unknown[]).shift());
    expect(validateAnthropic(req({ ...base, messages }))).toBeUndefined();
  });

  it("Responses: a function_call without its output is refused", () => {
    const input = [
      { role: "user", content: "hi" },
      { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
      { role: "user", content: "go on" },
    ];
    expect(validateResponses(req({ model: "gpt-5", input }))?.message).toBe(
      "No tool output found for function call call_1.",
    );
    expect(validateResponses(req({ model: "gpt-5", input, previous_response_id: "resp_1" }))).toBeUndefined();
  });

  it("Gemini: every functionCall is answered by the very next turn, part for part", () => {
    const call = (n: number) => ({
      role: "model",
      parts: Array.from({ length: n }, () => ({ functionCall: { name: "f", args: {} } })),
    });
    const answer = (n: number) => ({
      role: "user",
      parts: Array.from({ length: n }, () => ({ functionResponse: { name: "f", response: {} } })),
    });
    const user = { role: "user", parts: [{ text: "x" }] };
    expect(validateGemini(req({ contents: [user, call(2), answer(2)] }))).toBeUndefined();
    expect(validateGemini(req({ contents: [user, call(2), answer(1)] }))?.message).toMatch(
      /number of function response parts is equal/,
    );
    expect(validateGemini(req({ contents: [user, call(1), user] }))?.message).toMatch(
      /number of function response/,
    );
    expect(validateGemini(req({ contents: [user, answer(1)] }))?.message).toMatch(
      /function response turn comes immediately after a function call turn/,
    );
    expect(
      validateGemini(
        req({ contents: [user, { role: "model", parts: [{ text: "hm" }] }, call(1), answer(1)] }),
      )?.message,
    ).toMatch(/function call turns come immediately after a user turn/);
  });
});

describe("images, as every vendor checks them", () => {
  const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).toString("base64");
  const NOT_PNG = Buffer.from("GIF89a-but-said-png").toString("base64");
  const url = (data: string, type = "image/png") => `data:${type};base64,${data}`;

  it("Anthropic: image blocks, top level and inside a tool_result, must be what their media type says", () => {
    const img = (data: string, media_type = "image/png") => ({
      type: "image",
      source: { type: "base64", media_type, data },
    });
    const inResult = (block: unknown) => [
      ...toolTurn.slice(0, 2),
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "x" }, block] },
        ],
      },
    ];
    expect(validateAnthropic(req({ ...base, messages: inResult(img(PNG)) }))).toBeUndefined();
    expect(validateAnthropic(req({ ...base, messages: inResult(img(NOT_PNG)) }))?.message).toMatch(
      /does not match the provided media type image\/png/,
    );
    expect(validateAnthropic(req({ ...base, messages: inResult(img(PNG, "image/bmp")) }))?.message).toMatch(
      /unsupported image media type/,
    );
    expect(validateAnthropic(req({ ...base, messages: inResult({ type: "tool_use" }) }))?.message).toMatch(
      /tool_result\.content\.1: Input tag 'tool_use'/,
    );
    expect(
      validateAnthropic(req({ ...base, messages: [{ role: "user", content: [img("not base64!")] }] }))
        ?.message,
    ).toMatch(/not valid base64/);
  });

  it("Anthropic: 5 MB of base64 per image, 8000 px a side, 2000 px past 20 images", () => {
    const header = (w: number, h: number) => {
      const b = Buffer.alloc(33);
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(b);
      b.write("IHDR", 12, "latin1");
      b.writeUInt32BE(w, 16);
      b.writeUInt32BE(h, 20);
      return b;
    };
    const img = (b: Buffer) => ({
      type: "image",
      source: { type: "base64", media_type: "image/png", data: b.toString("base64") },
    });
    const one = (...blocks: unknown[]) => req({ ...base, messages: [{ role: "user", content: blocks }] });
    expect(validateAnthropic(one(img(header(8000, 10))))).toBeUndefined();
    expect(validateAnthropic(one(img(header(8001, 10))))?.message).toMatch(
      /image dimensions exceed max allowed size: 8000 pixels/,
    );
    const wide = img(header(2100, 10));
    expect(validateAnthropic(one(...Array.from({ length: 20 }, () => wide)))).toBeUndefined();
    expect(validateAnthropic(one(...Array.from({ length: 21 }, () => wide)))?.message).toMatch(
      /max allowed size for many-image requests: 2000 pixels/,
    );
    const big = Buffer.concat([header(100, 100), Buffer.alloc(4 * 1024 * 1024)]);
    expect(validateAnthropic(one(img(big)))?.message).toMatch(
      /image exceeds 5 MB maximum: \d+ bytes > 5242880 bytes/,
    );
  });

  it("Chat Completions: image_url parts are checked, and a tool message carries text only", () => {
    const body = (content: unknown) => ({ model: "gpt-4o", messages: [{ role: "user", content }] });
    expect(validateChat(req(body([{ type: "image_url", image_url: { url: url(PNG) } }])))).toBeUndefined();
    expect(
      validateChat(req(body([{ type: "image_url", image_url: { url: url(NOT_PNG) } }])))?.message,
    ).toMatch(/does not match/);
    const tool = {
      model: "gpt-4o",
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: [{ type: "image_url", image_url: { url: url(PNG) } }] },
      ],
    };
    expect(validateChat(req(tool))?.message).toMatch(/Supported values are: 'text'/);
  });

  it("Responses: input_image parts, in messages and in function_call_output, are checked", () => {
    const out = (output: unknown) => ({
      model: "gpt-5",
      input: [
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output },
      ],
    });
    expect(validateResponses(req(out([{ type: "input_image", image_url: url(PNG) }])))).toBeUndefined();
    expect(validateResponses(req(out([{ type: "input_image", image_url: url(NOT_PNG) }])))?.message).toMatch(
      /does not match/,
    );
    expect(validateResponses(req(out([{ type: "image", image_url: url(PNG) }])))).toBeDefined();
  });

  it("Gemini: inlineData images are checked", () => {
    const body = (data: string) => ({
      contents: [
        { role: "user", parts: [{ text: "look" }, { inlineData: { mimeType: "image/png", data } }] },
      ],
    });
    expect(validateGemini(req(body(PNG)))).toBeUndefined();
    expect(validateGemini(req(body(NOT_PNG)))?.message).toMatch(/does not match/);
  });
});
