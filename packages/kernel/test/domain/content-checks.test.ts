import { create } from "@bufbuild/protobuf";
import { MessageSchema, Role } from "@pluggableharness/protocol/content";
import { ModelErrorCategory, ToolDeclarationSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { assertContentSupported, contentProblems } from "../../src/domain/content-checks.ts";
import { ClassifiedModelError } from "../../src/domain/model-errors.ts";
import { model } from "./fixtures.ts";

const image = create(MessageSchema, {
  role: Role.USER,
  content: [
    { block: { case: "text", value: { text: "look" } } },
    {
      block: {
        case: "image",
        value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1]) } },
      },
    },
  ],
});
const pdf = create(MessageSchema, {
  role: Role.USER,
  content: [
    {
      block: {
        case: "document",
        value: { mediaType: "application/pdf", filename: "spec.pdf", data: new Uint8Array([1]) },
      },
    },
  ],
});

function caught(fn: () => void): ClassifiedModelError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ClassifiedModelError) return e;
    throw e;
  }
  throw new Error("expected a ClassifiedModelError");
}

describe("content checks", () => {
  it("an image for a model without vision is rejected as invalid_request, never dropped", () => {
    const spec = model({ id: "textonly", supportsVision: false });
    const err = caught(() => assertContentSupported(spec, { messages: [image] }));
    expect(err.category).toBe("invalid_request");
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("messages[0].content[1]");
    expect(err.message).toContain("image/png");
    expect(err.message).toContain("textonly");
    expect(err.toProto().category).toBe(ModelErrorCategory.INVALID_REQUEST);
    expect(image.content).toHaveLength(2);
  });

  it("a document for a model without document support is rejected as invalid_request, never dropped", () => {
    const err = caught(() =>
      assertContentSupported(model({ supportsDocuments: false }), { messages: [pdf] }),
    );
    expect(err.category).toBe("invalid_request");
    expect(err.message).toContain('"spec.pdf"');
    expect(err.message).toContain("no document support");
  });

  it("images inside tool results are checked too", () => {
    const nested = create(MessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "toolResult", value: { toolUseId: "t", content: image.content } } }],
    });
    expect(contentProblems(model({ supportsVision: false }), { messages: [nested] })[0]!.location).toBe(
      "messages[0].content[0].tool_result.content[1]",
    );
  });

  it("models with vision and document support accept both", () => {
    expect(contentProblems(model(), { messages: [image, pdf] })).toEqual([]);
  });

  it("tools declared to a model without tool use are rejected", () => {
    const tools = [create(ToolDeclarationSchema, { name: "bash" })];
    expect(
      contentProblems(model({ supportsToolUse: false }), { messages: [], tools }).map((p) => p.location),
    ).toEqual(["tools"]);
  });
});

describe("content problems, one by one", () => {
  const bare = (c: "image" | "document") =>
    create(MessageSchema, {
      role: Role.USER,
      content: [
        c === "image"
          ? { block: { case: "image", value: { source: { case: "data", value: new Uint8Array([1]) } } } }
          : { block: { case: "document", value: { data: new Uint8Array([1]) } } },
      ],
    });

  it("names each block where it is, and its media type when it has one", () => {
    const spec = model({ id: "m", supportsVision: false, supportsDocuments: false });
    expect(contentProblems(spec, { messages: [bare("image"), bare("document"), pdf] })).toEqual([
      {
        location: "messages[0].content[0]",
        message: "messages[0].content[0]: an image cannot be sent to m, which has no vision support",
      },
      {
        location: "messages[1].content[0]",
        message: "messages[1].content[0]: the document cannot be sent to m, which has no document support",
      },
      {
        location: "messages[2].content[0]",
        message:
          'messages[2].content[0]: the application/pdf document "spec.pdf" cannot be sent to m, which has no document support',
      },
    ]);
  });

  it("finds blocks inside tool results and assembled context, and tools for a model without tool use", () => {
    const spec = model({ id: "m", supportsVision: false, supportsToolUse: false });
    const nested = create(MessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "toolResult", value: { toolUseId: "t", content: image.content } } }],
    });
    const tools = [create(ToolDeclarationSchema, { name: "read" })];
    const problems = contentProblems(spec, {
      messages: [nested],
      assembledContext: [{ content: image.content } as never],
      tools,
    });
    expect(problems.map((p) => p.location)).toEqual([
      "messages[0].content[0].tool_result.content[1]",
      "assembled_context[0].content[1]",
      "tools",
    ]);
    expect(problems[2]!.message).toBe("tools are declared but m does not support tool use");
    // a capable model takes all of it; no tools means nothing to refuse
    expect(contentProblems(model(), { messages: [nested, pdf], tools })).toEqual([]);
    expect(contentProblems(model({ supportsToolUse: false }), { messages: [], tools: [] })).toEqual([]);
    expect(() => assertContentSupported(model(), { messages: [image, pdf] })).not.toThrow();
  });

  it("joins every problem into one invalid_request error", () => {
    const spec = model({ id: "m", supportsVision: false, supportsDocuments: false });
    const err = caught(() => assertContentSupported(spec, { messages: [image, pdf] }));
    expect(err.message).toBe(
      'messages[0].content[1]: an image/png image cannot be sent to m, which has no vision support; messages[1].content[0]: the application/pdf document "spec.pdf" cannot be sent to m, which has no document support',
    );
  });
});
