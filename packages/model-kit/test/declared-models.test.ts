// The two adapter hooks for providers whose models come from configuration rather than a
// built-in catalog: declaredModels (added after the built-ins, overridden by models_json)
// and defaultPricing (for models_json entries that name no pricing).
import type { JsonValue } from "@bufbuild/protobuf";
import type { PluginContext } from "@pluggableharness/plugin-sdk";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { describe, expect, it } from "vitest";
import { type CatalogModel, createModelService, type ModelAdapter } from "../src/index.ts";

const quietLog = { debug() {}, info() {}, warn() {}, error() {}, trace() {} };
const ctx = { log: quietLog, signal: new AbortController().signal } as unknown as PluginContext;

const builtin: CatalogModel = {
  id: "base",
  contextWindow: 1000,
  maxOutputTokens: 100,
  toolUse: true,
  vision: false,
  documents: false,
  streaming: true,
  parallelToolCalls: false,
  caching: { explicitMarkers: false, implicitAutomatic: false },
  toolChoiceModes: ["auto"],
  pricing: { tiers: [{ input: 1, output: 2 }] },
  sources: { all: "test" },
};

function adapter(): ModelAdapter<{ ids: string[]; free: boolean }> {
  return {
    packageJson: new URL("../package.json", import.meta.url),
    name: "test",
    attributes: [
      { name: "models", kind: "list_string", description: "ids" },
      { name: "free", kind: "bool", description: "free", default: false },
    ],
    builtins: [builtin],
    ownsModel: () => false,
    configure: (values) => ({
      ids: (values["models"] as string[] | undefined) ?? [],
      free: values["free"] === true,
    }),
    declaredModels: (state) =>
      state.ids.map((id) => ({
        ...builtin,
        id,
        pricing: state.free ? { free: true, tiers: [] } : builtin.pricing,
        userDeclared: true,
      })),
    defaultPricing: (values) => (values["free"] === true ? { free: true, tiers: [] } : undefined),
    // biome-ignore lint/correctness/useYield: never streams in this test
    async *stream() {
      throw new Error("not used");
    },
  };
}

const struct = (o: Record<string, JsonValue>) => o as never;

describe("configuration-declared models", () => {
  it("adds declared models after the built-ins and lets models_json override them", async () => {
    const service = createModelService(adapter());
    const result = await service.configure(
      {
        config: struct({
          models: ["a", "b"],
          free: true,
          models_json: JSON.stringify({ b: { context_window: 5, max_output_tokens: 2 } }),
        }),
      },
      ctx,
    );
    expect(result.result.diagnostics).toEqual([]);
    const models = service.getCapabilities().capabilities.models;
    expect(models.map((m) => m.id)).toEqual(["base", "a", "b"]);
    const b = models.find((m) => m.id === "b")!;
    expect(b.contextWindow).toBe(5n);
    // models_json entry without pricing took the provider's default (free).
    expect(b.pricing?.free).toBe(true);
    expect(models.find((m) => m.id === "a")?.pricing?.free).toBe(true);
    expect(models.find((m) => m.id === "base")?.pricing?.free).toBe(false);
  });

  it("still requires pricing when the provider offers no default", async () => {
    const service = createModelService(adapter());
    const result = await service.configure(
      { config: struct({ models_json: JSON.stringify({ x: { context_window: 5, max_output_tokens: 2 } }) }) },
      ctx,
    );
    const errors = result.result.diagnostics.filter((d) => d.severity === DiagnosticSeverity.ERROR);
    expect(errors.map((d) => d.summary).join("\n")).toMatch(/"pricing" is required/);
  });
});
