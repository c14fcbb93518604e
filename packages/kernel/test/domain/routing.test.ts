import { create } from "@bufbuild/protobuf";
import { MessageSchema, Role } from "@pluggableharness/protocol/content";
import { GenerationParamsSchema, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { contentNeeds, RoutingExhaustedError, routeModel, type TurnNeeds } from "../../src/domain/routing.ts";
import { model, plainModel } from "./fixtures.ts";

const big = { provider: "anthropic", spec: model({ id: "big", contextWindow: 1_000_000n }) };
const small = {
  provider: "local",
  spec: plainModel({
    id: "small",
    contextWindow: 8_000n,
    supportsVision: false,
    supportsDocuments: false,
    supportedToolChoiceModes: [ToolChoiceMode.AUTO],
  }),
};
const blind = { provider: "openai", spec: model({ id: "blind", supportsVision: false }) };
const base: TurnNeeds = { inputTokens: 1_000n, toolUse: false, vision: false, documents: false };

describe("capability-aware routing", () => {
  it("the primary is chosen when it satisfies the turn", () => {
    const d = routeModel([small, big], base);
    expect(d.chosen.spec.id).toBe("small");
    expect(d.index).toBe(0);
    expect(d.skipped).toEqual([]);
  });

  it("a candidate whose context window is too small is skipped with a reason", () => {
    const d = routeModel([small, big], { ...base, inputTokens: 50_000n });
    expect(d.chosen.spec.id).toBe("big");
    expect(d.skipped).toEqual([
      {
        provider: "local",
        modelId: "small",
        reasons: ["needs 50000 input tokens but the context window is 8000"],
      },
    ]);
  });

  it("tool use, vision and document needs skip candidates that lack them", () => {
    const noTools = { provider: "x", spec: plainModel({ id: "notools", supportsToolUse: false }) };
    const d = routeModel([noTools, blind, small, big], {
      ...base,
      toolUse: true,
      vision: true,
      documents: true,
    });
    expect(d.chosen.spec.id).toBe("big");
    expect(d.skipped.map((s) => [s.modelId, s.reasons.length])).toEqual([
      ["notools", 1],
      ["blind", 1],
      ["small", 2],
    ]);
    expect(d.skipped[1]!.reasons[0]).toContain("no vision");
  });

  it("thinking and tool-choice parameters the candidate cannot honour skip it", () => {
    const params = create(GenerationParamsSchema, {
      thinkingEffort: "high",
      toolChoice: { mode: ToolChoiceMode.ANY },
    });
    const d = routeModel([small, big], { ...base, params, toolNames: ["bash"] });
    expect(d.chosen.spec.id).toBe("big");
    expect(d.skipped[0]!.reasons.join(" | ")).toMatch(/thinking_effort: .*no effort control.*tool_choice/);
    expect(d.params.outcome).toBe("accepted");
  });

  it("under the fallback parameter policy the candidate serves the turn with its defaults", () => {
    const params = create(GenerationParamsSchema, { thinkingEffort: "high" });
    const d = routeModel([small, big], { ...base, params, paramPolicy: "fallback" });
    expect(d.chosen.spec.id).toBe("small");
    expect(d.params.outcome).toBe("fell_back");
  });

  it("exhausting the chain is a typed error listing why each candidate was skipped", () => {
    try {
      routeModel([small, blind], { ...base, vision: true });
      throw new Error("expected routing to fail");
    } catch (e) {
      expect(e).toBeInstanceOf(RoutingExhaustedError);
      const err = e as RoutingExhaustedError;
      expect(err.category).toBe("routing_exhausted");
      expect(err.skipped.map((s) => s.modelId)).toEqual(["small", "blind"]);
      expect(err.message).toContain("local/small");
      expect(err.message).toContain("openai/blind");
    }
    expect(() => routeModel([], base)).toThrow(RoutingExhaustedError);
  });

  it("the turn's content needs are read from the messages, tool results included", () => {
    const msgs = [
      create(MessageSchema, {
        role: Role.USER,
        content: [
          {
            block: {
              case: "toolResult",
              value: {
                toolUseId: "1",
                content: [{ block: { case: "image", value: { mediaType: "image/png" } } }],
              },
            },
          },
        ],
      }),
    ];
    expect(contentNeeds(msgs, 0)).toEqual({ vision: true, documents: false, toolUse: true });
    expect(contentNeeds([], 2)).toEqual({ vision: false, documents: false, toolUse: true });
  });
});

describe("routing edges", () => {
  it("a request exactly the size of the context window fits; one token more does not", () => {
    const spec = model({ id: "w", contextWindow: 1_000n });
    const chain = [{ provider: "p", spec }];
    expect(routeModel(chain, { ...base, inputTokens: 1_000n }).chosen.spec.id).toBe("w");
    expect(() => routeModel(chain, { ...base, inputTokens: 1_001n })).toThrow(
      "no model in the chain can serve this turn:\n  - p/w: needs 1001 input tokens but the context window is 1000",
    );
  });

  it("an empty chain says so", () => {
    const e = (() => {
      try {
        routeModel([], base);
      } catch (err) {
        return err as RoutingExhaustedError;
      }
      throw new Error("routed");
    })();
    expect(e).toBeInstanceOf(RoutingExhaustedError);
    expect([e.category, e.message, e.skipped]).toEqual([
      "routing_exhausted",
      "no model can serve this turn: the model chain is empty",
      [],
    ]);
  });

  it("reports each unmet need of a skipped candidate", () => {
    const spec = model({ id: "x", supportsToolUse: false, supportsVision: false, supportsDocuments: false });
    try {
      routeModel([{ provider: "p", spec }], { ...base, toolUse: true, vision: true, documents: true });
      throw new Error("routed");
    } catch (err) {
      expect((err as RoutingExhaustedError).skipped).toEqual([
        {
          provider: "p",
          modelId: "x",
          reasons: [
            "the turn uses tools but the model has no tool use",
            "the turn carries images but the model has no vision",
            "the turn carries documents but the model has no document support",
          ],
        },
      ]);
    }
  });

  it("a SPECIFIC tool_choice without the request's tool names is refused", () => {
    const params = create(GenerationParamsSchema, {
      toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "read" },
    });
    const chain = [{ provider: "p", spec: model({ id: "s" }) }];
    expect(() => routeModel(chain, { ...base, params })).toThrow(
      /tool_name "read" is not a tool of this request/,
    );
    expect(routeModel(chain, { ...base, params, toolNames: ["read"] }).chosen.spec.id).toBe("s");
  });

  it("finds documents, tool use and tools among a request's needs", () => {
    const doc = create(MessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "document", value: { data: new Uint8Array([1]) } } }],
    });
    const use = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: [{ block: { case: "toolUse", value: { id: "1", name: "read" } } }],
    });
    expect(contentNeeds([doc], 0)).toEqual({ vision: false, documents: true, toolUse: false });
    expect(contentNeeds([use], 0)).toEqual({ vision: false, documents: false, toolUse: true });
    expect(contentNeeds([], 1)).toEqual({ vision: false, documents: false, toolUse: true });
    expect(contentNeeds([], 0)).toEqual({ vision: false, documents: false, toolUse: false });
  });
});
