import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { ToolErrorCategory, type ToolEvent, ToolEventSchema } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { InvokeStreamRule, InvokeStreamValidator } from "../../src/domain/invoke-stream.ts";
import { checkPayload } from "../../src/domain/payload-validation.ts";
import { objectSchema, tool, validated } from "./fixtures.ts";

const ev = (event: MessageInitShape<typeof ToolEventSchema>["event"]): ToolEvent =>
  create(ToolEventSchema, { event });
const result = (payload: Record<string, unknown>) =>
  ev({ case: "result", value: { payload: payload as never } });
const chunk = (text: string) =>
  ev({ case: "outputChunk", value: { stream: 1, data: new TextEncoder().encode(text) } });
const exit = (code: number) => ev({ case: "exitStatus", value: { exitCode: code } });
const error = (category: ToolErrorCategory, extra: object = {}) =>
  ev({ case: "error", value: { category, message: "failed", retryable: false, ...extra } });

const bash = validated(
  tool({
    name: "bash",
    streaming: true,
    outputSchema: objectSchema({ stdout: SchemaType.STRING, exit_code: SchemaType.INTEGER }, ["exit_code"]),
  }),
  "exec",
);

function run(events: ToolEvent[], op = bash) {
  const v = new InvokeStreamValidator(op);
  for (const e of events) v.push(e);
  return { v, outcome: v.finish() };
}

describe("Invoke stream validation", () => {
  it("a stream closed by exactly one result is accepted with its payload", () => {
    const { v, outcome } = run([chunk("hi"), exit(0), result({ stdout: "hi", exit_code: 0 })]);
    expect(v.violations).toEqual([]);
    expect(outcome).toMatchObject({
      kind: "result",
      payload: { stdout: "hi", exit_code: 0 },
      exitStatus: { exitCode: 0 },
    });
  });

  it("a stream closed by exactly one error is accepted with its error", () => {
    const { outcome } = run([error(ToolErrorCategory.NOT_FOUND)]);
    expect(outcome.kind).toBe("error");
    if (outcome.kind === "error") expect(outcome.error.category).toBe(ToolErrorCategory.NOT_FOUND);
  });

  it("a stream without a terminal event is a protocol violation", () => {
    const { v, outcome } = run([chunk("partial")]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.terminalRequired]);
    expect(outcome.kind).toBe("error");
    if (outcome.kind === "error") expect(outcome.error.category).toBe(ToolErrorCategory.UNKNOWN);
  });

  it("a second terminal event is a protocol violation", () => {
    const { v, outcome } = run([result({ exit_code: 0 }), error(ToolErrorCategory.TIMEOUT)]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.singleTerminal]);
    expect(outcome.kind).toBe("error");
  });

  it("nothing may follow the terminal event", () => {
    const v = new InvokeStreamValidator(bash);
    expect(v.push(result({ exit_code: 0 }))).toBe(true);
    expect(v.closed).toBe(true);
    expect(v.push(chunk("late"))).toBe(false);
    expect(v.push(exit(0))).toBe(false);
    expect(v.violations.map((x) => x.rule)).toEqual([
      InvokeStreamRule.nothingAfterTerminal,
      InvokeStreamRule.nothingAfterTerminal,
    ]);
    const outcome = v.finish();
    expect(outcome.kind).toBe("error");
    if (outcome.kind === "error") {
      expect(outcome.error.category).toBe(ToolErrorCategory.UNKNOWN);
      expect(outcome.error.retryable).toBe(false);
      expect(outcome.error.message).toContain("exec.bash");
    }
  });

  it("exit_status appears at most once", () => {
    const { v } = run([exit(0), exit(1), result({ exit_code: 1 })]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.exitStatusAtMostOnce]);
  });

  it("output_chunk, progress and partial_result may repeat before the terminal event", () => {
    const { v, outcome } = run([
      chunk("a"),
      ev({ case: "progress", value: { message: "half", fractionComplete: 0.5 } }),
      ev({ case: "partialResult", value: { payload: { hits: 1 } } }),
      chunk("b"),
      result({ exit_code: 0 }),
    ]);
    expect(v.violations).toEqual([]);
    expect(v.warnings).toEqual([]);
    expect(outcome.kind).toBe("result");
  });

  it("intermediate events from a streaming: false operation are kept with a warning", () => {
    const quiet = validated(tool({ name: "cat", streaming: false }));
    const { v, outcome } = run([chunk("x"), result({ content: "x" })], quiet);
    expect(v.warnings.map((w) => w.rule)).toEqual([InvokeStreamRule.intermediateNeedsStreaming]);
    expect(outcome.kind).toBe("result");
  });

  it("a result payload that fails output_schema becomes an unknown-category ToolError", () => {
    const { v, outcome } = run([result({ stdout: 42 })]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.outputSchema]);
    expect(outcome.kind).toBe("error");
    if (outcome.kind === "error") {
      expect(outcome.error.category).toBe(ToolErrorCategory.UNKNOWN);
      expect(outcome.error.message).toMatch(/output_schema/);
      expect(JSON.stringify(outcome.error.details)).toContain("output-schema");
    }
  });

  it("a plugin-emitted process_crashed is a protocol violation", () => {
    const { v, outcome } = run([error(ToolErrorCategory.PROCESS_CRASHED)]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.processCrashedKernelOnly]);
    if (outcome.kind === "error") {
      expect(outcome.error.category).toBe(ToolErrorCategory.UNKNOWN);
      expect(outcome.error.details?.["reported_error"]).toBeDefined();
    } else throw new Error("expected an error outcome");
  });

  it("an unclassified error is a protocol violation", () => {
    const { v } = run([error(ToolErrorCategory.UNSPECIFIED)]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.errorClassified]);
  });

  it("an unknown error without the raw error in details draws a warning", () => {
    const { v, outcome } = run([error(ToolErrorCategory.UNKNOWN)]);
    expect(v.warnings.map((w) => w.rule)).toEqual([InvokeStreamRule.unknownNeedsDetails]);
    expect(outcome.kind).toBe("error");
  });

  it("an empty event is a protocol violation", () => {
    const { v } = run([create(ToolEventSchema), result({ exit_code: 0 })]);
    expect(v.violations.map((x) => x.rule)).toEqual([InvokeStreamRule.eventSet]);
  });
});

describe("payload validation", () => {
  it("arguments are validated against input_schema", () => {
    const op = validated(tool());
    expect(checkPayload(op.inputJsonSchema, { path: "a" }).ok).toBe(true);
    const bad = checkPayload(op.inputJsonSchema, { path: 3 });
    expect(bad.ok).toBe(false);
    expect(bad.errors[0]).toContain("/path");
    expect(checkPayload(op.inputJsonSchema, {}).errors[0]).toContain("path");
  });
});
