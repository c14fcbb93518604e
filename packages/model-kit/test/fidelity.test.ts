// The kit pieces behind issue 17's wire fixes: sampling per model, model-not-found
// classification, and tool-result text every vendor accepts.
import { create } from "@bufbuild/protobuf";
import { ContentBlockSchema } from "@pluggableharness/protocol/content";
import { StreamCompletionRequestSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  acceptedSampling,
  type CatalogModel,
  classifyHttpFailure,
  EMPTY_TOOL_RESULT,
  parseCustomModels,
  samplingFor,
  saysModelNotFound,
  toModelSpec,
  toolResultText,
} from "../src/index.ts";

const model = (init: Partial<CatalogModel>): CatalogModel => ({
  id: "m",
  contextWindow: 1000,
  maxOutputTokens: 100,
  toolUse: true,
  vision: false,
  documents: false,
  streaming: true,
  parallelToolCalls: false,
  caching: { explicitMarkers: false, implicitAutomatic: false },
  toolChoiceModes: [],
  pricing: { tiers: [{ input: 1, output: 1 }] },
  sources: {},
  ...init,
});

describe("sampling parameters per model", () => {
  const req = (params: object, providerOptions?: object) =>
    create(StreamCompletionRequestSchema, {
      params,
      ...(providerOptions ? { providerOptions } : {}),
    } as never);

  it("sends only what the catalog entry accepts, from typed params or provider_options", () => {
    const some = model({ sampling: { accepted: ["temperature"] } });
    const opts = { top_p: 0.5, seed: 3 };
    const choice = samplingFor(req({ temperature: 0.2, topK: 4n }, opts), some, {
      providerOptions: opts,
      optionKeys: ["top_p"],
    });
    expect(choice).toEqual({ values: { temperature: 0.2 }, dropped: ["top_p", "top_k"] });
    // The consumed provider_options key is gone; the others stay for the pass-through.
    expect(opts).toEqual({ seed: 3 });
    expect(samplingFor(req({ temperature: 0.2, topP: 0.9 }), model({})).values).toEqual({
      temperature: 0.2,
      top_p: 0.9,
    });
  });

  it("honours only_at_effort against the requested effort or the model's default", () => {
    const gpt = model({
      thinking: { effort: { levels: ["none", "medium"], default: "medium" }, disable: "always" },
      sampling: { accepted: ["temperature", "top_p"], onlyAtEffort: ["none"] },
    });
    expect([...(acceptedSampling(gpt, undefined) ?? [])]).toEqual([]);
    expect([...(acceptedSampling(gpt, "none") ?? [])]).toEqual(["temperature", "top_p"]);
    expect(toModelSpec(gpt).sampling).toMatchObject({ accepted: [1, 2], onlyAtEffort: ["none"] });
    expect(toModelSpec(model({})).sampling).toBeUndefined();
  });

  it("models_json declares sampling, inherits it with like, and reports a bad declaration", () => {
    const builtins = [model({ id: "base", sampling: { accepted: [] } })];
    const { models, diagnostics } = parseCustomModels(
      "models_json",
      JSON.stringify({
        a: { like: "base" },
        b: { like: "base", sampling: ["temperature", "top_k"] },
        c: { like: "base", sampling: { accepted: ["top_p"], only_at_effort: ["low"] } },
        d: { like: "base", sampling: null },
        e: { like: "base", sampling: ["heat"] },
      }),
      builtins,
    );
    expect(models.map((m) => [m.id, m.sampling])).toEqual([
      ["a", { accepted: [] }],
      ["b", { accepted: ["temperature", "top_k"] }],
      ["c", { accepted: ["top_p"], onlyAtEffort: ["low"] }],
      ["d", undefined],
    ]);
    expect(diagnostics.map((d) => d.summary)).toEqual([
      expect.stringContaining('Model "e": "sampling" must list'),
    ]);
  });
});

describe("model-not-found classification", () => {
  it("recognises the vendors' answers and flags them, never retryable", () => {
    expect(saysModelNotFound(404, "model_not_found", "The model `x` does not exist")).toBe(true);
    expect(saysModelNotFound(404, undefined, 'model "llama9" not found, try pulling it first')).toBe(true);
    expect(saysModelNotFound(400, "1500", "Invalid model: mistral-xl")).toBe(true);
    expect(saysModelNotFound(404, undefined, "File not found")).toBe(false);
    expect(saysModelNotFound(400, undefined, "messages: field required")).toBe(false);
    const f = classifyHttpFailure({
      status: 404,
      modelNotFound: true,
      headers: new Headers({ "x-should-retry": "true" }),
    });
    expect([f.category, f.retryable, f.modelNotFound, f.toProto().modelNotFound]).toEqual([
      "invalid_request",
      false,
      true,
      true,
    ]);
  });
});

describe("tool-result text", () => {
  const text = (t: string) => create(ContentBlockSchema, { block: { case: "text", value: { text: t } } });
  it("is never empty or whitespace-only", () => {
    expect(toolResultText([])).toBe(EMPTY_TOOL_RESULT);
    expect(toolResultText([text(" \n ")])).toBe(EMPTY_TOOL_RESULT);
    expect(toolResultText([text("a"), text("b")])).toBe("a\n\nb");
  });
});
