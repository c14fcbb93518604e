import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  GenerationParamsSchema,
  SamplingParameter,
  ThinkingDisable,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { samplingRefusal, validateGenerationParams } from "../../src/domain/generation-params.ts";
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

describe("sampling parameters per model (ModelSpec.sampling)", () => {
  const refuses = model({ id: "refuses", sampling: { accepted: [] } });
  const takesAll = model({
    id: "takes-all",
    sampling: { accepted: [SamplingParameter.TEMPERATURE, SamplingParameter.TOP_P, SamplingParameter.TOP_K] },
  });
  // GPT-5.x style: sampling only while not reasoning; the fixture's default effort is "medium".
  const onlyAtNone = model({
    id: "at-none",
    thinking: {
      supported: true,
      effort: { levels: ["none", "low", "medium"], default: "medium" },
      adaptiveByDefault: true,
      disable: ThinkingDisable.ALWAYS,
    },
    sampling: { accepted: [SamplingParameter.TEMPERATURE, SamplingParameter.TOP_P], onlyAtEffort: ["none"] },
  });
  const sampled = params({ temperature: 0.3, topP: 0.9, topK: 40n });

  it("a refused parameter is never sent, whatever the policy, and the candidate stays eligible", () => {
    for (const policy of ["reject", "fallback"] as const) {
      const r = validateGenerationParams(refuses, sampled, { ...ctx, policy });
      expect(r.outcome).toBe("fell_back");
      expect(r.params).toBeDefined();
      expect([r.params!.temperature, r.params!.topP, r.params!.topK]).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      expect(r.decisions.map((d) => [d.param, d.outcome])).toEqual([
        ["temperature", "fell_back"],
        ["top_p", "fell_back"],
        ["top_k", "fell_back"],
      ]);
      expect(r.decisions[0]!.reason).toBe(
        "refuses does not accept temperature; not sent, the model's default applies",
      );
    }
  });

  it("an accepted parameter is kept; a model without a sampling spec is not checked at all", () => {
    const r = validateGenerationParams(takesAll, sampled, ctx);
    expect(r.outcome).toBe("accepted");
    expect([r.params!.temperature, r.params!.topP, r.params!.topK]).toEqual([0.3, 0.9, 40n]);
    const undeclared = validateGenerationParams(model(), sampled, ctx);
    expect(undeclared.decisions).toEqual([]);
    expect(undeclared.params!.temperature).toBe(0.3);
  });

  it("only_at_effort: accepted at that effort (requested or default), dropped at any other", () => {
    const atDefault = validateGenerationParams(onlyAtNone, params({ temperature: 0.3 }), ctx);
    expect(atDefault.params!.temperature).toBeUndefined();
    expect(atDefault.decisions[0]!.reason).toContain('only at thinking effort "none", not "medium"');
    const atNone = validateGenerationParams(
      onlyAtNone,
      params({ temperature: 0.3, thinkingEffort: "none" }),
      ctx,
    );
    expect(atNone.outcome).toBe("accepted");
    expect(atNone.params!.temperature).toBe(0.3);
    expect(samplingRefusal(onlyAtNone, "top_k", "none")).toBe("at-none does not accept top_k");
  });
});

describe("one sampling rule for load time and request time", () => {
  it("the kernel's samplingRefusal agrees with the config loader's on every combination", async () => {
    const { samplingRefusal: atLoad } = await import("@pluggableharness/config");
    const specs = [
      model({ id: "none", sampling: { accepted: [] } }),
      model({ id: "temp", sampling: { accepted: [SamplingParameter.TEMPERATURE] } }),
      model({ id: "at-low", sampling: { accepted: [SamplingParameter.TOP_P], onlyAtEffort: ["low"] } }),
      plainModel({
        id: "plain-at-low",
        sampling: { accepted: [SamplingParameter.TOP_P], onlyAtEffort: ["low"] },
      }),
      model({ id: "undeclared" }),
    ];
    let compared = 0;
    for (const spec of specs)
      for (const param of ["temperature", "top_p", "top_k"] as const)
        for (const effort of [undefined, "low", "high"]) {
          expect(samplingRefusal(spec, param, effort), `${spec.id} ${param} ${effort}`).toBe(
            atLoad(spec, param, effort),
          );
          compared++;
        }
    expect(compared).toBe(45);
  });
});
