// Exact time arithmetic on google.protobuf.Timestamp: nanoseconds since the epoch as a
// bigint, so comparisons never lose precision to floating point.
import { create } from "@bufbuild/protobuf";
import { type Duration, type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";

/** The injected source of "now"; the domain core never reads the system clock itself. */
export type Clock = () => Timestamp;

export function timestampToNanos(ts: Timestamp): bigint {
  return ts.seconds * 1_000_000_000n + BigInt(ts.nanos);
}

export function nanosToTimestamp(ns: bigint): Timestamp {
  let seconds = ns / 1_000_000_000n;
  let nanos = ns % 1_000_000_000n;
  if (nanos < 0n) {
    nanos += 1_000_000_000n;
    seconds -= 1n;
  }
  return create(TimestampSchema, { seconds, nanos: Number(nanos) });
}

/** A Timestamp from epoch milliseconds (what most callers hold). */
export function timestampFromMillis(ms: number): Timestamp {
  return nanosToTimestamp(BigInt(Math.round(ms)) * 1_000_000n);
}

/** Duration in whole milliseconds (rounded up, so a 1ns deadline is not 0ms). */
export function durationToMillis(d: Duration): number {
  const ns = d.seconds * 1_000_000_000n + BigInt(d.nanos);
  return Number((ns + 999_999n) / 1_000_000n);
}

export function formatTimestamp(ts: Timestamp): string {
  const ms = Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1_000_000);
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return `${ts.seconds}s`;
  return new Date(ms).toISOString();
}
