// agent conform's model-provider checks pass for this provider against an Ollama-dialect fake.
import {
  EVERY_PROVIDER_PASSES,
  modelConformance,
  TRANSPORTS,
  unexpected,
} from "@pluggableharness/model-provider-testing";
import { expect, it } from "vitest";

const KEY = "local-test-key-for-conformance";
const MAIN = new URL("../src/main.ts", import.meta.url);

it.each(TRANSPORTS)(
  "passes every model-provider conformance check over the %s transport",
  async (isolation) => {
    const report = await modelConformance({
      isolation,
      main: MAIN,
      fake: { vendor: "ollama", apiKey: KEY },
      config: (fake) => ({ base_url: fake.baseUrl(), api_key: KEY, model: "llama3.2", dialect: "ollama" }),
      model: "llama3.2",
    });
    expect(
      unexpected(report, {
        pass: [
          ...EVERY_PROVIDER_PASSES,
          "model.capabilities.configured",
          "model.configure.missing_required",
          "model.errors.unsupported_image",
          "model.health",
        ],
        // No built-in catalog: a warning before Configure, the declared models checked after it.
        warn: ["model.capabilities.valid", "model.count_tokens"],
      }),
    ).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.isolation).toBe(isolation);
  },
);

it("fails a configuration that declares no model", async () => {
  const report = await modelConformance({
    main: MAIN,
    fake: { vendor: "ollama", apiKey: KEY },
    config: (fake) => ({ base_url: fake.baseUrl(), api_key: KEY }),
  });
  expect(report.exitCode).toBe(1);
  expect(report.results.find((r) => r.id === "model.capabilities.configured")?.status).toBe("fail");
});
