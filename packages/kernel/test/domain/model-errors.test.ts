import { create } from "@bufbuild/protobuf";
import { status as grpcStatus } from "@grpc/grpc-js";
import { ModelErrorCategory, ModelErrorSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  ClassifiedModelError,
  classifyGrpcStatus,
  GrpcCode,
  grpcCodeForModelError,
  type ModelErrorCategoryName,
  modelErrorReaction,
} from "../../src/domain/model-errors.ts";

const categories: ModelErrorCategoryName[] = [
  "context_length_exceeded",
  "rate_limited",
  "overloaded",
  "auth_error",
  "invalid_request",
  "content_filtered",
  "unknown",
];

describe("ModelError taxonomy and gRPC codes", () => {
  it("our numeric gRPC codes equal grpc-js's status constants", () => {
    for (const [name, code] of Object.entries(GrpcCode)) {
      expect(grpcStatus[name as keyof typeof grpcStatus]).toBe(code);
    }
  });

  it("each category maps to its gRPC code", () => {
    expect(categories.map((c) => [c, grpcCodeForModelError(c)])).toEqual([
      ["context_length_exceeded", GrpcCode.RESOURCE_EXHAUSTED],
      ["rate_limited", GrpcCode.RESOURCE_EXHAUSTED],
      ["overloaded", GrpcCode.UNAVAILABLE],
      ["auth_error", GrpcCode.UNAUTHENTICATED],
      ["invalid_request", GrpcCode.INVALID_ARGUMENT],
      ["content_filtered", GrpcCode.FAILED_PRECONDITION],
      ["unknown", GrpcCode.INTERNAL],
    ]);
  });

  it("unknown maps to INTERNAL, never to UNKNOWN", () => {
    expect(grpcCodeForModelError("unknown")).not.toBe(GrpcCode.UNKNOWN);
    const c = classifyGrpcStatus({ code: GrpcCode.UNKNOWN, message: "?" });
    expect(c).toMatchObject({ category: "unknown" });
  });

  it("every category survives the round trip code -> category with the ModelError detail", () => {
    for (const category of categories) {
      const e = new ClassifiedModelError(category, "x");
      const back = classifyGrpcStatus({
        code: grpcCodeForModelError(category),
        message: "x",
        detail: e.toProto(),
      });
      expect(back).toMatchObject({ category });
    }
  });

  it("each gRPC code without a detail classifies to its category", () => {
    const cases: [number, ModelErrorCategoryName][] = [
      [GrpcCode.RESOURCE_EXHAUSTED, "context_length_exceeded"],
      [GrpcCode.UNAVAILABLE, "overloaded"],
      [GrpcCode.UNAUTHENTICATED, "auth_error"],
      [GrpcCode.INVALID_ARGUMENT, "invalid_request"],
      [GrpcCode.FAILED_PRECONDITION, "content_filtered"],
      [GrpcCode.INTERNAL, "unknown"],
      [GrpcCode.DEADLINE_EXCEEDED, "overloaded"],
    ];
    for (const [code, category] of cases) {
      const c = classifyGrpcStatus({ code, message: "m" }) as ClassifiedModelError;
      expect([code, c.category]).toEqual([code, category]);
      expect(c.vendorCode).toBe(`grpc:${code}`);
    }
  });

  it("rate_limited is told apart from context_length_exceeded by its structured detail", () => {
    const detail = create(ModelErrorSchema, {
      category: ModelErrorCategory.RATE_LIMITED,
      message: "429",
      retryable: true,
      retryAfterSeconds: 7,
    });
    const c = classifyGrpcStatus({
      code: GrpcCode.RESOURCE_EXHAUSTED,
      message: "429",
      detail,
    }) as ClassifiedModelError;
    expect(c.category).toBe("rate_limited");
    expect(c.retryAfterSeconds).toBe(7);
  });

  it("cancellation is CANCELLED and never an application error", () => {
    expect(classifyGrpcStatus({ code: GrpcCode.CANCELLED, message: "" })).toEqual({ kind: "cancelled" });
  });

  it("a crashed provider process is UNAVAILABLE and retried once, then falls back", () => {
    expect(grpcCodeForModelError("process_crashed")).toBe(GrpcCode.UNAVAILABLE);
    expect(modelErrorReaction(new ClassifiedModelError("process_crashed", "x"))).toMatchObject({
      retrySameRequest: true,
      maxRetries: 1,
      fallback: true,
    });
  });

  it("an unclassified ModelError becomes unknown and non-retryable", () => {
    const c = ClassifiedModelError.fromProto(create(ModelErrorSchema, { message: "raw", retryable: true }));
    expect([c.category, c.retryable]).toEqual(["unknown", false]);
  });

  it("the vendor's raw code and body are kept for debugging", () => {
    const c = ClassifiedModelError.fromProto(
      create(ModelErrorSchema, {
        category: ModelErrorCategory.UNKNOWN,
        message: "m",
        vendorCode: "E42",
        vendorBody: "{}",
        httpStatus: 500,
      }),
    );
    expect(c.toProto()).toMatchObject({ vendorCode: "E42", vendorBody: "{}", httpStatus: 500 });
  });
});

describe("kernel reactions per ModelError category", () => {
  const react = (c: ModelErrorCategoryName) => modelErrorReaction(new ClassifiedModelError(c, "x"));

  it("context_length_exceeded is never blindly retried: the context must shrink or the turn fail", () => {
    expect(react("context_length_exceeded")).toMatchObject({
      retrySameRequest: false,
      mustShrinkContext: true,
    });
  });

  it("rate_limited is retried with backoff, honouring retry_after_seconds", () => {
    expect(react("rate_limited")).toMatchObject({ retrySameRequest: true });
  });

  it("overloaded is retried with backoff and is a fallback candidate", () => {
    expect(react("overloaded")).toMatchObject({ retrySameRequest: true, fallback: true });
  });

  it("auth_error is never retried nor silently fallen back, but surfaced to a human", () => {
    expect(react("auth_error")).toMatchObject({
      retrySameRequest: false,
      fallback: false,
      surfaceToHuman: true,
    });
  });

  it("invalid_request is not retried as-is and the request shape is logged", () => {
    expect(react("invalid_request")).toMatchObject({ retrySameRequest: false, logRequest: true });
  });

  it("content_filtered is surfaced distinctly", () => {
    expect(react("content_filtered")).toMatchObject({
      surfaceToHuman: true,
      retrySameRequest: false,
      fallback: false,
    });
  });

  it("unknown is non-retryable by default", () => {
    expect(react("unknown")).toMatchObject({ retrySameRequest: false, fallback: false });
  });
});
