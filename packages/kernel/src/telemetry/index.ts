// Builds the kernel's telemetry once per process from settings{} and the environment:
// the discarding backend when telemetry is off (or for replay), else the SDK-backed one,
// whose module (and with it every OpenTelemetry package) is imported only then.
import type { Settings } from "@pluggableharness/config";
import { exportPlan } from "./settings.ts";
import { noTelemetry, type Telemetry } from "./telemetry.ts";

export { exportPlan, signalUrl } from "./settings.ts";
export * from "./telemetry.ts";

export async function createTelemetry(
  settings: Settings,
  env: Readonly<Record<string, string | undefined>>,
  warn: (message: string) => void,
  resource: Readonly<Record<string, string>> = {},
): Promise<Telemetry> {
  const plan = exportPlan(settings, env);
  if (!plan || (!plan.traces && !plan.metrics && !plan.logs)) return noTelemetry;
  const { createOtelTelemetry } = await import("./otel.ts");
  return createOtelTelemetry({ ...plan, resourceAttrs: { ...plan.resourceAttrs, ...resource } }, warn);
}
