// agent conform's model-provider checks pass for this provider against its fake vendor.
import {
  EVERY_PROVIDER_PASSES,
  modelConformance,
  TRANSPORTS,
  unexpected,
} from "@pluggableharness/model-provider-testing";
import { expect, it } from "vitest";

const KEY = "xai-test-key-for-conformance";

it.each(TRANSPORTS)(
  "passes every model-provider conformance check over the %s transport",
  async (isolation) => {
    const report = await modelConformance({
      isolation,
      main: new URL("../src/main.ts", import.meta.url),
      fake: { vendor: "xai", apiKey: KEY },
      config: (fake) => ({ api_key: KEY, base_url: `${fake.url}/v1` }),
      model: "grok-4.3",
    });
    expect(
      unexpected(report, {
        pass: [
          ...EVERY_PROVIDER_PASSES,
          "model.capabilities.valid",
          "model.configure.missing_required",
          "model.health",
        ],
        // No token counter: a warning, and the kernel's fallback applies.
        warn: ["model.count_tokens"],
      }),
    ).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.isolation).toBe(isolation);
  },
);
