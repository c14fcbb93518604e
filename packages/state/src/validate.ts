// Input checks done before a transaction starts, so a bad event never half-writes a batch.

import {
  EVENT_KIND_MESSAGE,
  EVENT_KIND_PLAN,
  eventKindText,
  planDecisionText,
  pluginCategoryText,
} from "./codes.ts";
import { InvalidArgumentError, InvalidEventKindError } from "./errors.ts";
import type { CostEntry, NewEvent, PlanItemEntry } from "./types.ts";

const INT64_MAX = 9_223_372_036_854_775_807n;

function text(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0)
    throw new InvalidArgumentError(`${what} must be a non-empty string`);
  return value;
}

function count(value: unknown, what: string): number | bigint {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === "bigint" && value >= 0n && value <= INT64_MAX) return value;
  throw new InvalidArgumentError(`${what} must be a non-negative integer, got ${String(value)}`);
}

/** The row values of a validated event, ready to bind. */
export interface PreparedEvent {
  readonly kindText: string;
  readonly categoryText: string;
  readonly name: string;
  readonly version: string;
  readonly schemaVersion: string;
  readonly payload: Uint8Array;
  readonly timestamp: string | undefined;
  readonly costs: readonly PreparedCost[];
  readonly planItems: readonly PreparedPlanItem[];
}

export type PreparedCost = readonly [
  string,
  string,
  number | bigint,
  number | bigint,
  number | bigint,
  number | bigint,
  number,
];
export type PreparedPlanItem = readonly [string, string, string, string, string, string];

function prepareCost(entry: CostEntry, i: number): PreparedCost {
  const at = `costs[${i}]`;
  if (typeof entry.costUsd !== "number" || !Number.isFinite(entry.costUsd) || entry.costUsd < 0) {
    throw new InvalidArgumentError(`${at}.costUsd must be a finite, non-negative number`);
  }
  return [
    text(entry.providerName, `${at}.providerName`),
    text(entry.modelId, `${at}.modelId`),
    count(entry.inputTokens, `${at}.inputTokens`),
    count(entry.outputTokens, `${at}.outputTokens`),
    count(entry.cacheWriteTokens ?? 0, `${at}.cacheWriteTokens`),
    count(entry.cacheReadTokens ?? 0, `${at}.cacheReadTokens`),
    entry.costUsd,
  ];
}

function preparePlanItem(item: PlanItemEntry, i: number): PreparedPlanItem {
  const at = `planItems[${i}]`;
  return [
    text(item.turnId, `${at}.turnId`),
    text(item.toolCallId, `${at}.toolCallId`),
    text(item.providerName, `${at}.providerName`),
    text(item.toolName, `${at}.toolName`),
    planDecisionText(item.decision),
    text(item.decidedBy, `${at}.decidedBy`),
  ];
}

export function prepareEvent(event: NewEvent): PreparedEvent {
  if (event === null || typeof event !== "object") throw new InvalidArgumentError("event must be an object");
  if (typeof event.kind !== "number" || !Number.isInteger(event.kind))
    throw new InvalidEventKindError(Number(event.kind) || 0);
  const kindText = eventKindText(event.kind);
  const producer = event.producer;
  if (producer === null || typeof producer !== "object")
    throw new InvalidArgumentError("event.producer is required");
  const categoryText = pluginCategoryText(producer.category);
  if (!(event.payload instanceof Uint8Array))
    throw new InvalidArgumentError("event.payload must be a Uint8Array");
  let timestamp: string | undefined;
  if (event.timestamp !== undefined) {
    if (!(event.timestamp instanceof Date) || Number.isNaN(event.timestamp.getTime())) {
      throw new InvalidArgumentError("event.timestamp must be a valid Date");
    }
    timestamp = event.timestamp.toISOString();
  }
  const costs = (event.costs ?? []).map(prepareCost);
  if (costs.length > 0 && event.kind !== EVENT_KIND_MESSAGE) {
    throw new InvalidArgumentError(`cost ledger rows ride on message events, not on "${kindText}"`);
  }
  const planItems = (event.planItems ?? []).map(preparePlanItem);
  if (planItems.length > 0 && event.kind !== EVENT_KIND_PLAN) {
    throw new InvalidArgumentError(`plan items ride on plan events, not on "${kindText}"`);
  }
  return {
    kindText,
    categoryText,
    name: text(producer.name, "event.producer.name"),
    version: text(producer.version, "event.producer.version"),
    schemaVersion: text(event.schemaVersion, "event.schemaVersion"),
    payload: event.payload,
    timestamp,
    costs,
    planItems,
  };
}
