// agent conform's model-provider checks pass for this provider against its fake vendor.
import { fileURLToPath } from "node:url";
import { runConformance } from "@pluggableharness/conformance";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, expect, it } from "vitest";

const KEY = "test-key-for-conformance";
const MODEL = "claude-haiku-4-5-20251001";
let fake: FakeVendor;

beforeAll(async () => {
  fake = await startFakeVendor({
    vendor: "anthropic",
    validate: true,
    apiKey: KEY,
    // Every completion answers with a slow stream, so cancellation lands mid-stream.
    script: () => ({
      ...scenarios.text("one two three four five six seven eight", { chunks: 8 }),
      chunkDelayMs: 5,
    }),
  });
});

afterAll(async () => {
  await fake?.close();
});

it("passes every model-provider conformance check", async () => {
  const report = await runConformance({
    executable: fileURLToPath(new URL("../src/main.ts", import.meta.url)),
    config: {
      api_key: KEY,
      base_url: fake.url,
      // A declared model without vision or documents lets those rejections be checked.
      models_json: JSON.stringify({
        "conformance-text-only": { like: MODEL, vision: false, documents: false },
      }),
    },
    model: MODEL,
  });
  const failed = report.results.filter((r) => r.status === "fail");
  expect(failed).toEqual([]);
  expect(report.exitCode).toBe(0);
  const ids = report.results.map((r) => r.id);
  for (const id of [
    "model.describe",
    "model.capabilities.valid",
    "model.configure.no_echo",
    "model.stream.shape",
    "model.errors.unknown_model",
    "model.errors.unsupported_image",
    "model.errors.unsupported_document",
    "model.stream.cancel",
    "model.count_tokens",
    "model.secrets",
    "model.errors.auth",
  ]) {
    expect(report.results.find((r) => r.id === id)?.status, id).toBe("pass");
  }
  expect(ids).toContain("model.health");
});
