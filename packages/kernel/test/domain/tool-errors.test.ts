import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { ToolErrorCategory, ToolErrorSchema, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  autoRetryFor,
  ClassifiedToolError,
  processCrashedError,
  resolveToolTimeout,
  toolErrorReaction,
} from "../../src/domain/tool-errors.ts";
import { interactive, resource, tool } from "./fixtures.ts";

const err = (category: ToolErrorCategory, retryable = true) =>
  create(ToolErrorSchema, { category, message: "x", retryable });
const live = { turnAborted: false };
const ds = tool();
const res = resource();
const idem = resource({ idempotent: true });
const ask = interactive();

describe("ToolError reactions", () => {
  it("invalid_arguments is never retried and is fed back to the model as an error result", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.INVALID_ARGUMENTS), ds, live);
    expect(r.autoRetry.allowed).toBe(false);
    expect(r.presentation).toBe("error_result");
  });

  it("not_found is surfaced to the model without retry", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.NOT_FOUND), ds, live);
    expect(r).toMatchObject({ presentation: "error_result", autoRetry: { allowed: false } });
  });

  it("permission_denied is surfaced and never retried with escalated privilege", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.PERMISSION_DENIED), idem, live);
    expect(r).toMatchObject({
      presentation: "error_result",
      neverEscalate: true,
      autoRetry: { allowed: false },
    });
  });

  it("execution_failed is ordinary tool_result content", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.EXECUTION_FAILED, false), res, live);
    expect(r.presentation).toBe("ordinary_result");
    expect(r.tripsBreaker).toBe(false);
  });

  it("timeout cancels the invocation and is retryable at the kernel's discretion", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.TIMEOUT), ds, live);
    expect(r.cancelInvocation).toBe(true);
    expect(r.autoRetry).toMatchObject({ allowed: true, serialized: false });
  });

  it("concurrency_conflict is retried serialized on the same key regardless of idempotent", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.CONCURRENCY_CONFLICT, false), res, live);
    expect(res.idempotent).toBe(false);
    expect(r.autoRetry).toMatchObject({ allowed: true, serialized: true });
  });

  it("cancelled is not shown to the model as a failure unless the turn is aborted", () => {
    expect(toolErrorReaction(err(ToolErrorCategory.CANCELLED), res, live).presentation).toBe("not_a_failure");
    const aborted = toolErrorReaction(err(ToolErrorCategory.CANCELLED), res, { turnAborted: true });
    expect(aborted.presentation).toBe("error_result");
    expect(aborted.autoRetry.allowed).toBe(false);
  });

  it("process_crashed is surfaced as an error result and trips the circuit breaker", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.PROCESS_CRASHED), res, live);
    expect(r).toMatchObject({ presentation: "error_result", tripsBreaker: true, logDetails: true });
  });

  it("unknown is non-retryable by default and its details are logged", () => {
    const r = toolErrorReaction(err(ToolErrorCategory.UNKNOWN, false), ds, live);
    expect(r).toMatchObject({ logDetails: true, autoRetry: { allowed: false } });
  });

  it("an unspecified category is handled as unknown", () => {
    expect(toolErrorReaction(err(ToolErrorCategory.UNSPECIFIED), ds, live).category).toBe("unknown");
  });
});

describe("the idempotent / retry gate", () => {
  it("a retryable error of a data_source is auto-retried whatever idempotent says", () => {
    expect(ds.idempotent).toBe(false);
    expect(autoRetryFor(err(ToolErrorCategory.TIMEOUT), ds)).toMatchObject({ allowed: true });
  });

  it("a retryable error of a resource is auto-retried only when it declares idempotent: true", () => {
    expect(autoRetryFor(err(ToolErrorCategory.TIMEOUT), res).allowed).toBe(false);
    expect(autoRetryFor(err(ToolErrorCategory.TIMEOUT), idem).allowed).toBe(true);
  });

  it("a non-retryable error is never auto-retried", () => {
    expect(autoRetryFor(err(ToolErrorCategory.TIMEOUT, false), ds).allowed).toBe(false);
  });

  it("interactive calls are never auto-retried", () => {
    expect(autoRetryFor(err(ToolErrorCategory.TIMEOUT), ask).allowed).toBe(false);
    expect(autoRetryFor(err(ToolErrorCategory.CONCURRENCY_CONFLICT), ask).allowed).toBe(false);
    expect(ask.kind).toBe(ToolKind.INTERACTIVE);
  });
});

describe("timeouts and synthesised errors", () => {
  it("an agent.hcl override wins over default_timeout, which wins over the global default", () => {
    const pluginDefault = create(DurationSchema, { seconds: 30n });
    expect(resolveToolTimeout({ pluginDefault, configOverrideMs: 5_000, globalDefaultMs: 120_000 })).toEqual({
      ms: 5_000,
      source: "config",
    });
    expect(resolveToolTimeout({ pluginDefault, globalDefaultMs: 120_000 })).toEqual({
      ms: 30_000,
      source: "plugin",
    });
    expect(resolveToolTimeout({ globalDefaultMs: 120_000 })).toEqual({ ms: 120_000, source: "global" });
  });

  it("process_crashed is synthesised by the kernel, classified and attributed", () => {
    const e = processCrashedError("exec", "connection reset");
    expect(e.category).toBe(ToolErrorCategory.PROCESS_CRASHED);
    expect(e.message).toContain('"exec"');
  });

  it("tool errors are typed classes with a category and round-trip to the wire", () => {
    const c = ClassifiedToolError.fromProto(err(ToolErrorCategory.NOT_FOUND, false));
    expect(c).toBeInstanceOf(Error);
    expect(c.category).toBe("not_found");
    expect(c.toProto().category).toBe(ToolErrorCategory.NOT_FOUND);
  });
});
