// The tool-provider conformance checks, in the order they run.
import type { CategoryChecks } from "../runner.ts";
import { checkCancellation } from "./cancel.ts";
import { checkInvocations } from "./invoke.ts";
import { checkPreview, checkRender } from "./preview-render.ts";
import { checkConfigure, checkDescribe, checkSchema } from "./schema.ts";

export const toolChecks: CategoryChecks = async (ctx) => {
  await checkDescribe(ctx);
  let { response, toolset } = await checkSchema(ctx);
  const configured = await checkConfigure(ctx, response);
  if (!configured) {
    ctx.record("tool.invoke", "skip", "not invoked: the configuration was rejected");
    return;
  }
  // A bridge (the MCP provider) has its operations once configured: judge those.
  if (response.operationsFromConfig) ({ response, toolset } = await checkSchema(ctx, true));
  const captured = await checkInvocations(ctx, response, toolset);
  await checkCancellation(ctx, response, toolset);
  await checkPreview(ctx, response);
  await checkRender(ctx, captured);
  const healthy = ctx.host.running && ctx.host.crashCount === 0;
  ctx.record(
    "tool.health",
    healthy ? "pass" : "fail",
    healthy ? "still running, never crashed" : `crashed ${ctx.host.crashCount} time(s) during the checks`,
  );
};
