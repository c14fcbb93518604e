// The model-provider conformance checks, in the order they run. The model exercised is
// ConformanceOptions.model (`--model`), else the first one the provider declares.
import { ModelService } from "@pluggableharness/protocol/model";
import type { CategoryChecks } from "../runner.ts";
import { checkCapabilities, checkConfigure, checkConfiguredCatalog, checkDescribe } from "./capabilities.ts";
import {
  checkCancellation,
  checkCountTokens,
  checkErrorClassification,
  checkSecrets,
  checkStreamShape,
  pickModel,
} from "./stream.ts";

export { SECRET_CANARY } from "./capabilities.ts";

export const modelChecks: CategoryChecks = async (ctx) => {
  await checkDescribe(ctx);
  const caps = await checkCapabilities(ctx);
  const configured = await checkConfigure(ctx, caps);
  if (!configured) {
    ctx.record("model.stream", "skip", "no completion attempted: the configuration was rejected");
    return;
  }
  // Configure may add user-declared models, so the catalog is read again.
  const configuredCaps = (await ctx.host.client(ModelService).getCapabilities({})).capabilities ?? caps;
  if (caps && configuredCaps) checkConfiguredCatalog(ctx, caps, configuredCaps);
  const model = pickModel(ctx, configuredCaps);
  if (!model) {
    ctx.record(
      "model.stream",
      "fail",
      ctx.options.model
        ? `the provider declares no model "${ctx.options.model}"`
        : "the provider declares no model",
    );
    return;
  }
  await checkStreamShape(ctx, model);
  await checkErrorClassification(ctx, configuredCaps);
  await checkCancellation(ctx, model);
  await checkCountTokens(ctx, model);
  await checkSecrets(ctx, configuredCaps, model);
  const healthy = ctx.host.running && ctx.host.crashCount === 0;
  ctx.record(
    "model.health",
    healthy ? "pass" : "fail",
    healthy ? "still running, never crashed" : `crashed ${ctx.host.crashCount} time(s) during the checks`,
  );
};
