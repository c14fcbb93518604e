// agent conform's model-provider checks pass for this provider against an Ollama-dialect fake.
import { fileURLToPath } from "node:url";
import { runConformance } from "@pluggableharness/conformance";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, expect, it } from "vitest";

const KEY = "local-test-key-for-conformance";
let fake: FakeVendor;

beforeAll(async () => {
  fake = await startFakeVendor({
    vendor: "ollama",
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
    config: { base_url: fake.baseUrl(), api_key: KEY, model: "llama3.2", dialect: "ollama" },
    model: "llama3.2",
  });
  expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
  expect(report.exitCode).toBe(0);
  for (const id of [
    "model.describe",
    "model.capabilities.configured",
    "model.configure.missing_required",
    "model.configure.no_echo",
    "model.stream.shape",
    "model.errors.unknown_model",
    "model.errors.unsupported_image",
    "model.errors.unsupported_document",
    "model.stream.cancel",
    "model.secrets",
    "model.errors.auth",
    "model.health",
  ]) {
    expect(report.results.find((r) => r.id === id)?.status, id).toBe("pass");
  }
  // No built-in catalog: a warning before Configure, the declared models checked after it.
  expect(report.results.find((r) => r.id === "model.capabilities.valid")?.status).toBe("warn");
  expect(report.results.find((r) => r.id === "model.count_tokens")?.status).toBe("warn");
});

it("fails a configuration that declares no model", async () => {
  const report = await runConformance({
    executable: fileURLToPath(new URL("../src/main.ts", import.meta.url)),
    config: { base_url: fake.baseUrl(), api_key: KEY },
  });
  expect(report.exitCode).toBe(1);
  expect(report.results.find((r) => r.id === "model.capabilities.configured")?.status).toBe("fail");
});
