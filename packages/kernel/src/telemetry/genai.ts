// One model-call attempt as a GenAI `chat` span (OpenTelemetry GenAI semantic conventions)
// with its metrics: tokens by type and cost exactly as the attempt's usage records carry
// them (the same records the cost ledger stores), latency, and the outcome. Prompt and
// completion text go on the span only when the operator opted in (recordContent).
import { StopReason } from "@pluggableharness/protocol/model";
import type { AccumulatedCompletion } from "../domain/index.ts";
import type { Telemetry, TelemetryAttrs } from "./telemetry.ts";

export interface AttemptTarget {
  readonly provider: string;
  readonly model: string;
  /** The vendor family for gen_ai.system (the provider plugin's name stands in for it). */
  readonly system: string;
  readonly attempt: number;
}

interface AttemptLike {
  readonly kind: string;
  readonly completion?: AccumulatedCompletion | undefined;
  readonly error?: { readonly category: string; readonly message: string };
}

function text(c: AccumulatedCompletion): string {
  return c.message.content
    .map((b) => (b.block.case === "text" ? b.block.value.text : ""))
    .filter(Boolean)
    .join("\n");
}

/** Runs one attempt inside its span and records what it cost. */
export async function traceAttempt<O extends AttemptLike>(
  t: Telemetry,
  target: AttemptTarget,
  run: () => Promise<O>,
): Promise<O> {
  if (!t.active) return run();
  const started = performance.now();
  const base: TelemetryAttrs = { "gen_ai.system": target.system, "gen_ai.request.model": target.model };
  return t.span(
    `chat ${target.model}`,
    {
      ...base,
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": target.provider,
      "model.attempt": target.attempt,
    },
    async (span) => {
      const out = await run();
      const c = out.completion;
      const latency = (performance.now() - started) / 1000;
      const outcome = out.kind === "error" ? (out.error?.category ?? "unknown") : out.kind;
      t.record("agent.model.latency", latency, { ...base, "model.outcome": outcome });
      if (out.kind === "error") span.fail(outcome, out.error?.message);
      if (!c) return out;
      let input = 0n;
      let output = 0n;
      let cacheRead = 0n;
      let cacheWrite = 0n;
      for (const r of c.usage) {
        input += r.usage?.inputTokens ?? 0n;
        output += r.usage?.outputTokens ?? 0n;
        cacheRead += r.usage?.cacheReadTokens ?? 0n;
        cacheWrite += r.usage?.cacheWriteTokens ?? 0n;
      }
      const responseModel = c.metadata?.actualModel || c.message.producedByModelId || target.model;
      span.set({
        "gen_ai.response.model": responseModel,
        "gen_ai.response.id": c.providerRequestId,
        "gen_ai.response.finish_reasons": c.stop ? StopReason[c.stop.reason]?.toLowerCase() : undefined,
        "gen_ai.usage.input_tokens": Number(input),
        "gen_ai.usage.output_tokens": Number(output),
        "gen_ai.usage.cache_read_input_tokens": Number(cacheRead),
        "gen_ai.usage.cache_creation_input_tokens": Number(cacheWrite),
        "agent.cost_usd": c.costUsd,
        ...(t.recordContent ? { "gen_ai.completion": text(c) } : {}),
      });
      const attrs = { ...base, "gen_ai.response.model": responseModel };
      const tokens: [string, bigint][] = [
        ["input", input],
        ["output", output],
        ["cache_read", cacheRead],
        ["cache_write", cacheWrite],
      ];
      for (const [type, n] of tokens)
        if (n > 0n) t.add("agent.token.usage", Number(n), { ...attrs, "token.type": type });
      // Each usage record's own dollar figure, so the metric sums what the ledger sums.
      for (const r of c.usage) if (r.costUsd > 0) t.add("agent.cost.usage", r.costUsd, attrs);
      return out;
    },
  );
}
