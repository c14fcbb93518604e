// agent conform's model-provider checks run against a provider and its vendor's fake.
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type CheckStatus,
  type ConformanceReport,
  runConformance,
  TRANSPORTS,
} from "@pluggableharness/conformance";
import {
  type FakeVendor,
  type FakeVendorOptions,
  scenarios,
  startFakeVendor,
} from "@pluggableharness/fake-vendors";

export interface ModelConformanceCase {
  /** The provider's entry point. */
  readonly main: URL;
  /** The fake vendor; by default it validates requests and answers slowly (see `paced`). */
  readonly fake: FakeVendorOptions;
  readonly config: (fake: FakeVendor) => JsonObject;
  readonly model?: string;
  /** The transport the provider runs on (default: a process). */
  readonly isolation?: (typeof TRANSPORTS)[number];
}

/** The transports every first-party model provider is checked over. */
export { TRANSPORTS };

/** The checks every first-party model provider passes; each test adds its own. */
export const EVERY_PROVIDER_PASSES = [
  "model.describe",
  "model.configure.no_echo",
  "model.stream.shape",
  "model.errors.unknown_model",
  "model.errors.unsupported_document",
  "model.stream.cancel",
  "model.secrets",
  "model.errors.auth",
] as const;

/** An answer in 8 chunks 5 ms apart, so the cancellation check lands mid-stream. */
const paced = () => ({
  ...scenarios.text("one two three four five six seven eight", { chunks: 8 }),
  chunkDelayMs: 5,
});

/** Starts the fake, runs the model checks against the provider, and stops the fake. */
export async function modelConformance(c: ModelConformanceCase): Promise<ConformanceReport> {
  const fake = await startFakeVendor({ validate: true, script: paced, ...c.fake });
  try {
    return await runConformance({
      executable: fileURLToPath(c.main),
      config: c.config(fake),
      ...(c.model ? { model: c.model } : {}),
      ...(c.isolation ? { isolation: c.isolation } : {}),
    });
  } finally {
    await fake.close();
  }
}

/**
 * What is not as expected, one line each: every failed check, and every named check whose
 * status differs from the one it is listed under. Empty when the report is as expected.
 */
export function unexpected(
  report: ConformanceReport,
  expected: Partial<Record<CheckStatus, readonly string[]>>,
): string[] {
  const out: string[] = [];
  const named = new Set(Object.values(expected).flat());
  for (const r of report.results)
    if (r.status === "fail" && !named.has(r.id)) out.push(`${r.id}: fail (${r.reason})`);
  for (const [status, ids] of Object.entries(expected)) {
    for (const id of ids ?? []) {
      const got = report.results.find((r) => r.id === id)?.status ?? "missing";
      if (got !== status) out.push(`${id}: ${got}, expected ${status}`);
    }
  }
  return out;
}
