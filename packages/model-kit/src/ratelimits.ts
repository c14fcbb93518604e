// Rate-limit budgets exactly as a vendor reports them in response headers. A snapshot holds
// only the numbers the vendor sent: nothing is synthesised, defaulted or converted between
// counts and percentages. The one conversion is a relative reset ("6m0s") to an instant,
// because RateLimitSnapshot carries resets as timestamps.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type RateLimitKind,
  type RateLimitSnapshot,
  RateLimitSnapshotSchema,
  type WindowRole,
} from "@pluggableharness/protocol/model";
import { parseDurationSeconds } from "./errors.ts";

export type ResetFormat =
  /** An RFC 3339 instant (Anthropic). */
  | "rfc3339"
  /** A Go duration until the reset (OpenAI, xAI). */
  | "duration"
  /** Whole or fractional seconds until the reset. */
  | "seconds"
  /** Unix epoch seconds. */
  | "epoch-seconds";

/** The header names of one published budget. */
export interface RateLimitHeaderFamily {
  kind: RateLimitKind;
  limit?: string;
  remaining?: string;
  reset?: string;
  resetFormat?: ResetFormat;
  /** A percentage-used header, for vendors that publish percentages instead of counts. */
  usedPercent?: string;
  windowSeconds?: number;
  windowRole?: WindowRole;
  limitId?: string;
  limitName?: string;
}

function intHeader(headers: Headers, name: string | undefined): bigint | undefined {
  if (!name) return undefined;
  const v = headers.get(name)?.trim();
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return BigInt(v);
}

function resetInstant(raw: string, format: ResetFormat, nowMs: number): number | undefined {
  switch (format) {
    case "rfc3339": {
      const t = Date.parse(raw);
      return Number.isNaN(t) ? undefined : t;
    }
    case "duration": {
      const s = parseDurationSeconds(raw);
      return s === undefined ? undefined : nowMs + s * 1000;
    }
    case "seconds":
      return /^\d+(\.\d+)?$/.test(raw) ? nowMs + Number(raw) * 1000 : undefined;
    case "epoch-seconds":
      return /^\d+$/.test(raw) ? Number(raw) * 1000 : undefined;
  }
}

/**
 * One snapshot per family for which at least one header is present, in family order.
 * Absent or unreadable headers leave their field absent.
 */
export function rateLimitsFromHeaders(
  headers: Headers,
  families: readonly RateLimitHeaderFamily[],
  nowMs = Date.now(),
): RateLimitSnapshot[] {
  const out: RateLimitSnapshot[] = [];
  for (const f of families) {
    const limit = intHeader(headers, f.limit);
    const remaining = intHeader(headers, f.remaining);
    const resetRaw = f.reset ? headers.get(f.reset)?.trim() : undefined;
    const resetMs = resetRaw ? resetInstant(resetRaw, f.resetFormat ?? "rfc3339", nowMs) : undefined;
    const pctRaw = f.usedPercent ? headers.get(f.usedPercent)?.trim() : undefined;
    const usedPercent = pctRaw && /^\d+(\.\d+)?$/.test(pctRaw) ? Number(pctRaw) : undefined;
    if (limit === undefined && remaining === undefined && resetMs === undefined && usedPercent === undefined)
      continue;
    out.push(
      create(RateLimitSnapshotSchema, {
        kind: f.kind,
        ...(limit !== undefined ? { limit } : {}),
        ...(remaining !== undefined ? { remaining } : {}),
        ...(resetMs !== undefined ? { resetsAt: timestampFromMs(resetMs) } : {}),
        ...(usedPercent !== undefined ? { usedPercent } : {}),
        ...(f.windowSeconds !== undefined ? { windowSeconds: BigInt(f.windowSeconds) } : {}),
        ...(f.windowRole !== undefined ? { windowRole: f.windowRole } : {}),
        ...(f.limitId !== undefined ? { limitId: f.limitId } : {}),
        ...(f.limitName !== undefined ? { limitName: f.limitName } : {}),
      }),
    );
  }
  return out;
}
