// Turning decoded kernel records into ledger rows. These helpers read the typed objects
// the kernel already holds — the storage layer itself never decodes a payload.

import type { MessageEvent } from "@pluggableharness/protocol/event";
import type { Plan } from "@pluggableharness/protocol/plan";
import { InvalidArgumentError } from "./errors.ts";
import type { CostEntry, PlanItemEntry } from "./types.ts";

/**
 * One cost_ledger row per usage report the message carries (MessageEvent.usage), each
 * at the cost_usd the kernel computed when that report arrived. Retries and fallback
 * attempts that were billed appear as their own UsageRecords, so each is billed once.
 * `servedBy` names the provider/model that served the message; it defaults to
 * MessageEvent.model, which assistant messages carry.
 */
export function costEntriesFromMessage(
  message: MessageEvent,
  servedBy?: { readonly providerName: string; readonly modelId: string },
): CostEntry[] {
  if (message.usage.length === 0) return [];
  const providerName = servedBy?.providerName ?? message.model?.provider;
  const modelId = servedBy?.modelId ?? message.model?.id;
  if (!providerName || !modelId) {
    throw new InvalidArgumentError("a message with usage needs the provider and model that served it");
  }
  return message.usage.map((record, i) => {
    if (record.usage === undefined) throw new InvalidArgumentError(`usage[${i}] has no token counts`);
    const u = record.usage;
    return {
      providerName,
      modelId,
      inputTokens: u.inputTokens,
      outputTokens: u.outputTokens,
      cacheWriteTokens: u.cacheWriteTokens ?? 0n,
      cacheReadTokens: u.cacheReadTokens ?? 0n,
      costUsd: record.costUsd,
    };
  });
}

/** One plan_items row per item of a plan, as decided at plan-ready. */
export function planItemEntriesFromPlan(plan: Plan): PlanItemEntry[] {
  return plan.items.map((item) => ({
    turnId: plan.turnId,
    toolCallId: item.toolCallId,
    providerName: item.provider,
    toolName: item.toolName,
    decision: item.decision,
    decidedBy: item.decidedBy,
  }));
}
