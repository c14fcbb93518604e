// Context-provider checks (context/conformance.md): identity, declared stability and
// budget, Contribute's sections (labelled, text only, counted through the kernel's
// CountTokens, within the budget), self-truncation under a tiny budget, no history
// rewrite from a non-compactor, classified failures, health.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { HookPoint, PluginCategory } from "@pluggableharness/protocol/common";
import { Stability } from "@pluggableharness/protocol/content";
import {
  type ContextCapabilities,
  ContextCapabilitiesSchema,
  type ContextContribution,
  type ContextRequestSchema,
  ContextService,
} from "@pluggableharness/protocol/context";
import {
  badEnumValues,
  Code,
  checkFailsWith,
  checkHealth,
  checkOpening,
  codeName,
  failureCode,
} from "../common/checks.ts";
import { CONFORMANCE_SESSION, ulid } from "../common/ids.ts";
import type { CategoryChecks, CheckContext } from "../runner.ts";

const P = "context";

export const contextChecks: CategoryChecks = async (ctx) => {
  const client = ctx.host.client(ContextService);
  const { caps, configured } = await checkOpening(ctx, P, {
    category: PluginCategory.CONTEXT,
    client,
    capabilitiesSchema: ContextCapabilitiesSchema,
    declarations: (c) => checkDeclarations(ctx, c),
  });
  if (!configured || !caps) {
    ctx.record(`${P}.contribute`, "skip", "no contribution asked for: the configuration was refused");
    checkHealth(ctx, P);
    return;
  }
  const budget = caps.defaultTokenBudget > 0n ? caps.defaultTokenBudget : 4_000n;
  const request = (over: { tokenBudget?: bigint } = {}): MessageInitShape<typeof ContextRequestSchema> => ({
    sessionId: CONFORMANCE_SESSION,
    turnId: ulid(),
    tokenBudget: budget,
    workingDirectory: ctx.workingDirectory,
    modelTarget: { provider: "conformance", id: "conformance-1", contextWindow: 100_000n },
    ...over,
  });
  const counted = ctx.kernel.countTokensCalls;
  const code = await failureCode(async () => {
    const out = await client.contribute(request());
    judgeContribution(ctx, `${P}.contribute`, out, budget, caps);
    const sections = out.sections.filter((s) => s.tokens > 0n);
    ctx.record(
      `${P}.contribute.counted`,
      sections.length === 0 ? "skip" : ctx.kernel.countTokensCalls > counted ? "pass" : "fail",
      sections.length === 0
        ? "no section with tokens was contributed"
        : ctx.kernel.countTokensCalls > counted
          ? "section tokens came from the kernel's CountTokens"
          : "sections carry token counts, but CountTokens was never called: a provider-side estimate",
    );
  });
  if (code !== undefined)
    ctx.record(
      `${P}.contribute`,
      code === Code.UNAVAILABLE ? "warn" : "fail",
      `Contribute failed with ${codeName(code)} in a fresh working directory`,
    );

  // A budget of one token: the provider trims its own section or says budget_exceeded.
  const tiny = await failureCode(async () => {
    const out = await client.contribute(request({ tokenBudget: 1n }));
    const total = out.sections.reduce((n, s) => n + s.tokens, 0n);
    ctx.record(
      `${P}.contribute.budget`,
      total <= 1n ? "pass" : "fail",
      total <= 1n
        ? `fits a 1-token budget (${out.sections.length} sections)`
        : `returned ${total} tokens for a 1-token budget; the provider must truncate its own section`,
    );
  });
  if (tiny !== undefined)
    ctx.record(
      `${P}.contribute.budget`,
      tiny === Code.FAILED_PRECONDITION ? "pass" : "fail",
      tiny === Code.FAILED_PRECONDITION
        ? "refused a 1-token budget as budget_exceeded (FAILED_PRECONDITION)"
        : `a 1-token budget failed with ${codeName(tiny)}, not FAILED_PRECONDITION (budget_exceeded)`,
    );

  await checkFailsWith(
    ctx,
    `${P}.errors.invalid_request`,
    "Contribute with a negative token_budget",
    [Code.INVALID_ARGUMENT],
    () => client.contribute(request({ tokenBudget: -1n })),
  );
  checkHealth(ctx, P);
};

function checkDeclarations(ctx: CheckContext, caps: ContextCapabilities): void {
  const problems: string[] = [];
  // A compactor owns no section of its own, so it may budget none.
  if (caps.compactor ? caps.defaultTokenBudget < 0n : caps.defaultTokenBudget <= 0n)
    problems.push("default_token_budget is not positive");
  if (caps.stability !== Stability.STATIC && caps.stability !== Stability.DYNAMIC)
    problems.push("stability is neither STATIC nor DYNAMIC");
  const points = badEnumValues(caps.supportedHookPoints, HookPoint);
  if (points.length) problems.push(`unknown hook points ${points.join(", ")}`);
  ctx.record(
    `${P}.capabilities.declared`,
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : `budget ${caps.defaultTokenBudget}, ${Stability[caps.stability]}${caps.compactor ? ", compactor" : ""}`,
  );
}

function judgeContribution(
  ctx: CheckContext,
  id: string,
  out: ContextContribution,
  budget: bigint,
  caps: ContextCapabilities,
): void {
  const problems: string[] = [];
  out.sections.forEach((s, i) => {
    if (!s.label.trim()) problems.push(`section ${i} has no label`);
    const other = s.content.filter((b) => b.block.case !== "text");
    if (other.length)
      problems.push(`section ${i} holds ${other.map((b) => b.block.case).join(", ")} content (text only)`);
    if (s.tokens < 0n) problems.push(`section ${i} has negative tokens`);
  });
  const total = out.sections.reduce((n, s) => n + s.tokens, 0n);
  if (total > budget) problems.push(`${total} tokens exceed the ${budget}-token budget`);
  if (out.rewrittenHistory && !caps.compactor)
    problems.push("returned rewritten_history without declaring compactor (scope_violation)");
  ctx.record(
    id,
    problems.length ? "fail" : "pass",
    problems.length ? problems.join("; ") : `${out.sections.length} sections, ${total} tokens`,
  );
}
