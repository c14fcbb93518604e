import { create } from "@bufbuild/protobuf";
import { MessageSchema } from "@pluggableharness/protocol/content";
import { ModelSpecSchema, StreamCompletionRequestSchema } from "@pluggableharness/protocol/model";
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

  it("breakpoints inside the messages pass; any index outside, or a breakpoint without a position, is refused", () => {
    const two = { ...base, messages: [create(MessageSchema, {}), create(MessageSchema, {})] };
    const at = (...values: bigint[]) =>
      create(StreamCompletionRequestSchema, {
        ...two,
        cacheBreakpoints: values.map((value) => ({
          position: { case: "afterMessageIndex" as const, value },
        })),
      });
    expect(() => checkStreamCompletionRequest(at(0n, 1n), spec)).not.toThrow();
    expect(() => checkStreamCompletionRequest(at(2n), spec)).toThrow(
      new KernelContractError("cache breakpoint after message 2 is outside the request's messages"),
    );
    expect(() => checkStreamCompletionRequest(at(-1n), spec)).toThrow(/after message -1 is outside/);
    expect(() =>
      checkStreamCompletionRequest(
        create(StreamCompletionRequestSchema, { ...two, cacheBreakpoints: [{}] }),
        spec,
      ),
    ).toThrow(new KernelContractError("a cache breakpoint has no position"));
    const afterTools = create(StreamCompletionRequestSchema, {
      ...two,
      cacheBreakpoints: [{ position: { case: "afterTools", value: {} } }],
    });
    expect(() => checkStreamCompletionRequest(afterTools, spec)).not.toThrow();
  });

  it("a model without markers (or without a caching declaration) takes a request without breakpoints", () => {
    const plain = create(StreamCompletionRequestSchema, { ...base, modelId: "plain" });
    expect(() => checkStreamCompletionRequest(plain, plainModel())).not.toThrow();
    const undeclared = create(ModelSpecSchema, { id: "plain" });
    expect(() => checkStreamCompletionRequest(plain, undeclared)).not.toThrow();
    const marked = create(StreamCompletionRequestSchema, {
      ...base,
      modelId: "plain",
      cacheBreakpoints: [{ position: { case: "afterTools", value: {} } }],
    });
    expect(() => checkStreamCompletionRequest(marked, undeclared)).toThrow(
      new KernelContractError("cache breakpoints sent to plain, which has no explicit cache markers"),
    );
  });

  it("names the model a request was checked against when it names another", () => {
    expect(() =>
      checkStreamCompletionRequest(
        create(StreamCompletionRequestSchema, { ...base, modelId: "other" }),
        spec,
      ),
    ).toThrow(
      new KernelContractError(
        'StreamCompletionRequest names model "other" but was checked against "claude-x"',
      ),
    );
    expect(() =>
      checkStreamCompletionRequest(
        create(StreamCompletionRequestSchema, { ...base, callContext: { turnId: "t" } }),
        spec,
      ),
    ).toThrow(new KernelContractError("StreamCompletionRequest lacks call_context"));
  });
});

describe("ToolCall check messages", () => {
  it("say which call and which operation", () => {
    expect(() =>
      checkToolCall(create(ToolCallSchema, { toolName: "read_file", callContext: ctx }), readFile),
    ).toThrow(new KernelContractError("ToolCall for fs.read_file has no kernel-assigned id"));
    expect(() =>
      checkToolCall(create(ToolCallSchema, { id: "c", toolName: "cat", callContext: ctx }), readFile),
    ).toThrow(new KernelContractError('ToolCall names "cat" but is routed to fs.read_file'));
    expect(() =>
      checkToolCall(
        create(ToolCallSchema, { id: "c9", toolName: "read_file", callContext: { workingDirectory: "/r" } }),
        readFile,
      ),
    ).toThrow(
      new KernelContractError(
        "ToolCall c9 for fs.read_file lacks call_context (session_id and working_directory)",
      ),
    );
    const e = checkToolCall(
      create(ToolCallSchema, { id: "c1", toolName: "read_file", arguments: { path: 1 }, callContext: ctx }),
      readFile,
    );
    expect(e?.retryable).toBe(false);
    expect(e?.message).toMatch(/^arguments for read_file do not match its input schema: /);
  });
});
