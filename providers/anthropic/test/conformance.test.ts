// agent conform's model-provider checks pass for this provider against its fake vendor.
import {
  EVERY_PROVIDER_PASSES,
  modelConformance,
  TRANSPORTS,
  unexpected,
} from "@pluggableharness/model-provider-testing";
import { expect, it } from "vitest";

const KEY = "test-key-for-conformance";
const MODEL = "claude-haiku-4-5-20251001";

it.each(TRANSPORTS)(
  "passes every model-provider conformance check over the %s transport",
  async (isolation) => {
    const report = await modelConformance({
      isolation,
      main: new URL("../src/main.ts", import.meta.url),
      fake: { vendor: "anthropic", apiKey: KEY },
      config: (fake) => ({
        api_key: KEY,
        base_url: fake.url,
        // A declared model without vision or documents lets those rejections be checked.
        models_json: JSON.stringify({
          "conformance-text-only": { like: MODEL, vision: false, documents: false },
        }),
      }),
      model: MODEL,
    });
    expect(
      unexpected(report, {
        pass: [
          ...EVERY_PROVIDER_PASSES,
          "model.capabilities.valid",
          "model.errors.unsupported_image",
          "model.count_tokens",
        ],
      }),
    ).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.isolation).toBe(isolation);
    expect(report.results.map((r) => r.id)).toContain("model.health");
  },
);
