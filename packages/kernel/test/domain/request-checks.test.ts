import { create } from "@bufbuild/protobuf";
import { MessageSchema } from "@pluggableharness/protocol/content";
import { StreamCompletionRequestSchema } from "@pluggableharness/protocol/model";
import { ToolCallSchema, ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  checkStreamCompletionRequest,
  checkToolCall,
  KernelContractError,
} from "../../src/domain/request-checks.ts";
import { model, plainModel, tool, validated } from "./fixtures.ts";

const readFile = validated(tool(), "fs");
const ctx = {
  sessionId: "01J00000000000000000000000",
  turnId: "01J00000000000000000000001",
  workingDirectory: "/repo",
};

describe("ToolCall checks before Invoke", () => {
  it("a well-formed call passes", () => {
    const call = create(ToolCallSchema, {
      id: "c1",
      toolName: "read_file",
      arguments: { path: "a" },
      callContext: ctx,
    });
    expect(checkToolCall(call, readFile)).toBeUndefined();
  });

  it("arguments that fail input_schema become an invalid_arguments ToolError for the model", () => {
    const call = create(ToolCallSchema, {
      id: "c1",
      toolName: "read_file",
      arguments: { path: 1 },
      callContext: ctx,
    });
    const e = checkToolCall(call, readFile);
    expect(e?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect(e?.message).toContain("/path");
  });

  it("the kernel must set call_context with a working directory on every Invoke", () => {
    const call = create(ToolCallSchema, { id: "c1", toolName: "read_file", arguments: { path: "a" } });
    expect(() => checkToolCall(call, readFile)).toThrow(KernelContractError);
    const noCwd = create(ToolCallSchema, {
      id: "c1",
      toolName: "read_file",
      arguments: { path: "a" },
      callContext: { sessionId: "s" },
    });
    expect(() => checkToolCall(noCwd, readFile)).toThrow(/working_directory/);
  });

  it("a call carries a kernel-assigned id and names one of the provider's operations", () => {
    expect(() =>
      checkToolCall(create(ToolCallSchema, { toolName: "read_file", callContext: ctx }), readFile),
    ).toThrow(/id/);
    expect(() =>
      checkToolCall(create(ToolCallSchema, { id: "c", toolName: "cat", callContext: ctx }), readFile),
    ).toThrow(/cat/);
  });
});

describe("StreamCompletionRequest checks before dispatch", () => {
  const spec = model({ id: "claude-x" });
  const base = { modelId: "claude-x", callContext: ctx, messages: [create(MessageSchema, {})] };

  it("a well-formed request passes", () => {
    expect(() =>
      checkStreamCompletionRequest(create(StreamCompletionRequestSchema, base), spec),
    ).not.toThrow();
  });

  it("model_id and call_context must be set on every request", () => {
    expect(() =>
      checkStreamCompletionRequest(create(StreamCompletionRequestSchema, { ...base, modelId: "" }), spec),
    ).toThrow(/model_id/);
    expect(() =>
      checkStreamCompletionRequest(
        create(StreamCompletionRequestSchema, { ...base, callContext: undefined }),
        spec,
      ),
    ).toThrow(/call_context/);
  });

  it("no cache breakpoints go to a model without explicit markers", () => {
    const req = create(StreamCompletionRequestSchema, {
      ...base,
      modelId: "plain",
      cacheBreakpoints: [{ position: { case: "afterTools", value: {} } }],
    });
    expect(() => checkStreamCompletionRequest(req, plainModel())).toThrow(/explicit cache markers/);
  });

  it("a message-index breakpoint must point into the request's messages", () => {
    const req = create(StreamCompletionRequestSchema, {
      ...base,
      cacheBreakpoints: [{ position: { case: "afterMessageIndex", value: 1n } }],
    });
    expect(() => checkStreamCompletionRequest(req, spec)).toThrow(/outside/);
  });
});
