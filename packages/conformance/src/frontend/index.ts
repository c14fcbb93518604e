// Frontend-provider checks (frontend/conformance.md): identity, capabilities cheap and
// stable, the regions it paints and hook points it serves named from the spec's
// vocabulary, a sane configuration schema and Configure's in-band diagnostics (a
// malformed value refused by a diagnostic, not a failed call; a secret never echoed).
// The operator-facing Attach is the kernel's service the frontend dials over the broker,
// so it is exercised by the end-to-end tests of a frontend, not here.
import { HookPoint, PluginCategory } from "@pluggableharness/protocol/common";
import {
  type FrontendCapabilities,
  FrontendCapabilitiesSchema,
  FrontendService,
} from "@pluggableharness/protocol/frontend";
import { Region } from "@pluggableharness/protocol/render";
import { badEnumValues, checkHealth, checkOpening, codeName, failureCode } from "../common/checks.ts";
import type { CategoryChecks, CheckContext } from "../runner.ts";

const P = "frontend";

export const frontendChecks: CategoryChecks = async (ctx) => {
  const client = ctx.host.client(FrontendService);
  await checkOpening(ctx, P, {
    category: PluginCategory.FRONTEND,
    client,
    capabilitiesSchema: FrontendCapabilitiesSchema,
    declarations: (c) => checkDeclarations(ctx, c),
    // A value of the wrong shape is a diagnostic in the answer, never a failed call.
    beforeConfigure: async () => {
      const code = await failureCode(() =>
        client.configure({ config: { conformance_unknown_attribute: [1, { a: null }] } }),
      );
      ctx.record(
        `${P}.configure.in_band`,
        code === undefined ? "pass" : "fail",
        code === undefined
          ? "an odd configuration is answered with diagnostics, not a failed call"
          : `Configure with an unexpected value failed with ${codeName(code)} instead of answering with diagnostics`,
      );
    },
  });
  checkHealth(ctx, P);
};

function checkDeclarations(ctx: CheckContext, caps: FrontendCapabilities): void {
  const problems: string[] = [];
  const regions = badEnumValues(caps.supportedRegions, Region);
  if (regions.length) problems.push(`unknown regions ${regions.join(", ")}`);
  const points = badEnumValues(caps.supportedHookPoints, HookPoint);
  if (points.length) problems.push(`unknown hook points ${points.join(", ")}`);
  ctx.record(
    `${P}.capabilities.declared`,
    problems.length ? "fail" : caps.supportedRegions.length ? "pass" : "warn",
    problems.length
      ? problems.join("; ")
      : caps.supportedRegions.length
        ? `paints ${caps.supportedRegions.map((r) => Region[r]).join(", ")}`
        : "declares no supported_regions: producers cannot tell where their content lands",
  );
}
