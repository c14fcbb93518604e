import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { GenerationParamsSchema, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { validateGenerationParams } from "../../src/domain/generation-params.ts";
import { model, plainModel } from "./fixtures.ts";

const params = (init: MessageInitShape<typeof GenerationParamsSchema>) =>
  create(GenerationParamsSchema, init);
const ctx = { toolNames: ["read_file", "bash"] };
const m = model({ supportedToolChoiceModes: [ToolChoiceMode.AUTO, ToolChoiceMode.SPECIFIC] });

describe("generation-parameter validation", () => {
  it("absent params are accepted as the model's defaults", () => {
    expect(validateGenerationParams(m, undefined, ctx)).toEqual({ outcome: "accepted", decisions: [] });
  });

  it("thinking_effort must be one of the model's effort levels", () => {
    expect(validateGenerationParams(m, params({ thinkingEffort: "high" }), ctx).outcome).toBe("accepted");
    const r = validateGenerationParams(m, params({ thinkingEffort: "max" }), ctx);
    expect(r.outcome).toBe("rejected");
    expect(r.decisions[0]!.reason).toContain("low, medium, high");
    expect(r.params).toBeUndefined();
  });

  it("thinking_effort needs an effort control", () => {
    const r = validateGenerationParams(plainModel(), params({ thinkingEffort: "low" }), ctx);
    expect(r.decisions).toEqual([
      { param: "thinking_effort", outcome: "rejected", reason: "plain has no effort control" },
    ]);
  });

  it("thinking_budget_tokens must lie in the budget range", () => {
    expect(validateGenerationParams(m, params({ thinkingBudgetTokens: 1024n }), ctx).outcome).toBe(
      "accepted",
    );
    expect(validateGenerationParams(m, params({ thinkingBudgetTokens: 32_000n }), ctx).outcome).toBe(
      "accepted",
    );
    expect(validateGenerationParams(m, params({ thinkingBudgetTokens: 1023n }), ctx).outcome).toBe(
      "rejected",
    );
    expect(validateGenerationParams(m, params({ thinkingBudgetTokens: 32_001n }), ctx).outcome).toBe(
      "rejected",
    );
  });

  it("thinking_budget_tokens needs a budget control", () => {
    const r = validateGenerationParams(plainModel(), params({ thinkingBudgetTokens: 2000n }), ctx);
    expect(r.decisions[0]).toMatchObject({ param: "thinking_budget_tokens", outcome: "rejected" });
  });

  it("tool_choice.mode must be in supported_tool_choice_modes", () => {
    const r = validateGenerationParams(m, params({ toolChoice: { mode: ToolChoiceMode.ANY } }), ctx);
    expect(r.outcome).toBe("rejected");
    expect(r.decisions[0]!.reason).toContain("does not support tool_choice mode ANY");
  });

  it("an empty supported_tool_choice_modes means tool choice cannot be constrained", () => {
    const r = validateGenerationParams(
      plainModel({ supportedToolChoiceModes: [] }),
      params({ toolChoice: { mode: ToolChoiceMode.AUTO } }),
      ctx,
    );
    expect(r.outcome).toBe("rejected");
  });

  it("SPECIFIC needs a tool_name naming a tool in the request", () => {
    expect(
      validateGenerationParams(
        m,
        params({ toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "bash" } }),
        ctx,
      ).outcome,
    ).toBe("accepted");
    expect(
      validateGenerationParams(m, params({ toolChoice: { mode: ToolChoiceMode.SPECIFIC } }), ctx)
        .decisions[0]!.reason,
    ).toBe("SPECIFIC needs a tool_name");
    const r = validateGenerationParams(
      m,
      params({ toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "rm" } }),
      ctx,
    );
    expect(r.decisions[0]!.reason).toContain('"rm" is not a tool of this request');
  });

  it("modes other than SPECIFIC must omit tool_name", () => {
    const r = validateGenerationParams(
      m,
      params({ toolChoice: { mode: ToolChoiceMode.AUTO, toolName: "bash" } }),
      ctx,
    );
    expect(r.decisions[0]).toMatchObject({
      outcome: "rejected",
      reason: "tool_name must be omitted for mode AUTO",
    });
  });

  it("tool_choice.mode must be set", () => {
    expect(
      validateGenerationParams(m, params({ toolChoice: { mode: ToolChoiceMode.UNSPECIFIED } }), ctx).outcome,
    ).toBe("rejected");
  });

  it("max_output_tokens must be within the model's limit", () => {
    expect(validateGenerationParams(m, params({ maxOutputTokens: 8192n }), ctx).outcome).toBe("accepted");
    expect(validateGenerationParams(m, params({ maxOutputTokens: 8193n }), ctx).outcome).toBe("rejected");
    expect(validateGenerationParams(m, params({ maxOutputTokens: 0n }), ctx).outcome).toBe("rejected");
  });

  it("under the fallback policy an unsupported parameter falls back to the model's default, and says why", () => {
    const r = validateGenerationParams(
      m,
      params({
        thinkingEffort: "max",
        maxOutputTokens: 100_000n,
        toolChoice: { mode: ToolChoiceMode.ANY },
        temperature: 0.2,
      }),
      { ...ctx, policy: "fallback" },
    );
    expect(r.outcome).toBe("fell_back");
    expect(r.decisions.map((d) => [d.param, d.outcome])).toEqual([
      ["thinking_effort", "fell_back"],
      ["max_output_tokens", "fell_back"],
      ["tool_choice", "fell_back"],
    ]);
    expect(r.decisions[0]!.reason).toContain("the model's default applies");
    expect(r.params!.thinkingEffort).toBeUndefined();
    expect(r.params!.maxOutputTokens).toBeUndefined();
    expect(r.params!.toolChoice).toBeUndefined(); // AUTO == no tool_choice
    expect(r.params!.temperature).toBe(0.2);
  });

  it("malformed parameters are rejected even under the fallback policy", () => {
    const r = validateGenerationParams(
      m,
      params({ toolChoice: { mode: ToolChoiceMode.NONE, toolName: "x" } }),
      {
        ...ctx,
        policy: "fallback",
      },
    );
    expect(r.outcome).toBe("rejected");
  });
});
