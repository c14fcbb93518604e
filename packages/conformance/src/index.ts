// agent conform as a library: runConformance launches a plugin executable through the
// runtime, as the kernel would, and runs its category's checks.

import { contextChecks } from "./context/index.ts";
import { frontendChecks } from "./frontend/index.ts";
import { hookChecks } from "./hook/index.ts";
import { memoryChecks } from "./memory/index.ts";
import { modelChecks } from "./model/index.ts";
import { type CategoryChecks, type ConformanceOptions, type ConformanceReport, runWith } from "./runner.ts";
import { slashCommandChecks } from "./slash/index.ts";
import { toolChecks } from "./tool/index.ts";
import { widgetChecks } from "./widget/index.ts";

export { fallbackTokenCount, type RecordedEmit, type RecordedLog, RecordingKernel } from "./kernel.ts";
export { type LaunchedPlugin, type LaunchOptions, launchPlugin, TRANSPORTS } from "./launch.ts";
export {
  type CategoryChecks,
  type CheckContext,
  type CheckResult,
  type CheckStatus,
  type ConformanceOptions,
  type ConformanceReport,
  formatReport,
  formatResult,
  type SampleCall,
} from "./runner.ts";
export { snapshot } from "./tool/preview-render.ts";

/** Checks per category name, as discovery reports categories. */
export const CATEGORY_CHECKS: Readonly<Record<string, CategoryChecks>> = {
  model: modelChecks,
  tool: toolChecks,
  context: contextChecks,
  memory: memoryChecks,
  frontend: frontendChecks,
  widget: widgetChecks,
  hook: hookChecks,
};

/** Checks of declarations any category makes, after the category checks. */
export const CROSS_CHECKS: readonly CategoryChecks[] = [slashCommandChecks];

export function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  return runWith(options, CATEGORY_CHECKS, CROSS_CHECKS);
}
export { type Invocation, type InvokeOptions, ToolHarness } from "./testing.ts";
