// agent conform's model-provider checks pass for this provider against its fake vendor.
import {
  EVERY_PROVIDER_PASSES,
  modelConformance,
  TRANSPORTS,
  unexpected,
} from "@pluggableharness/model-provider-testing";
import { expect, it } from "vitest";

const KEY = "sk-test-key-for-conformance";

it.each(TRANSPORTS)(
  "passes every model-provider conformance check over the %s transport",
  async (isolation) => {
    const report = await modelConformance({
      isolation,
      main: new URL("../src/main.ts", import.meta.url),
      fake: { vendor: "openai-responses", apiKey: KEY, countTokens: () => 3 },
      config: (fake) => ({
        api_key: KEY,
        base_url: `${fake.url}/v1`,
        // A model without vision or documents, so the rejection checks have a target.
        models_json: JSON.stringify({
          "gpt-text-only": { like: "gpt-5.4-mini", vision: false, documents: false },
        }),
      }),
      model: "gpt-5.4-mini",
    });
    expect(
      unexpected(report, {
        pass: [
          ...EVERY_PROVIDER_PASSES,
          "model.capabilities.valid",
          "model.configure.missing_required",
          "model.errors.unsupported_image",
          "model.count_tokens",
          "model.health",
        ],
      }),
    ).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.isolation).toBe(isolation);
  },
);
