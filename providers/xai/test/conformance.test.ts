// agent conform's model-provider checks pass for this provider against its fake vendor.
import { fileURLToPath } from "node:url";
import { runConformance } from "@pluggableharness/conformance";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, expect, it } from "vitest";

const KEY = "xai-test-key-for-conformance";
let fake: FakeVendor;

beforeAll(async () => {
  fake = await startFakeVendor({
    vendor: "xai",
    validate: true,
    apiKey: KEY,
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
    config: { api_key: KEY, base_url: `${fake.url}/v1` },
    model: "grok-4.3",
  });
  expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
  expect(report.exitCode).toBe(0);
  for (const id of [
    "model.describe",
    "model.capabilities.valid",
    "model.configure.missing_required",
    "model.configure.no_echo",
    "model.stream.shape",
    "model.errors.unknown_model",
    "model.errors.unsupported_document",
    "model.stream.cancel",
    "model.secrets",
    "model.errors.auth",
    "model.health",
  ]) {
    expect(report.results.find((r) => r.id === id)?.status, id).toBe("pass");
  }
  // No token counter: a warning, and the kernel's fallback applies.
  expect(report.results.find((r) => r.id === "model.count_tokens")?.status).toBe("warn");
});
