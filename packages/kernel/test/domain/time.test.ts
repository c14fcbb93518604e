import { create } from "@bufbuild/protobuf";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  durationToMillis,
  formatTimestamp,
  nanosToTimestamp,
  timestampFromMillis,
  timestampToNanos,
} from "../../src/domain/time.ts";

const ts = (seconds: bigint, nanos = 0) => create(TimestampSchema, { seconds, nanos });
const parts = (t: { seconds: bigint; nanos: number }) => [t.seconds, t.nanos];

describe("exact time arithmetic", () => {
  it("converts a Timestamp to nanoseconds and back, normalising nanos into [0, 1e9)", () => {
    expect(timestampToNanos(ts(2n, 5))).toBe(2_000_000_005n);
    expect(timestampToNanos(ts(-1n, 999_999_999))).toBe(-1n);
    expect(parts(nanosToTimestamp(0n))).toEqual([0n, 0]);
    expect(parts(nanosToTimestamp(1_500_000_000n))).toEqual([1n, 500_000_000]);
    expect(parts(nanosToTimestamp(999_999_999n))).toEqual([0n, 999_999_999]);
    expect(parts(nanosToTimestamp(-1n))).toEqual([-1n, 999_999_999]);
    expect(parts(nanosToTimestamp(-1_000_000_000n))).toEqual([-1n, 0]);
    expect(parts(nanosToTimestamp(-1_500_000_000n))).toEqual([-2n, 500_000_000]);
  });

  it("takes epoch milliseconds, rounded to the nearest one", () => {
    expect(parts(timestampFromMillis(1500))).toEqual([1n, 500_000_000]);
    expect(parts(timestampFromMillis(1500.4))).toEqual([1n, 500_000_000]);
    expect(parts(timestampFromMillis(1500.6))).toEqual([1n, 501_000_000]);
    expect(parts(timestampFromMillis(-1))).toEqual([-1n, 999_000_000]);
  });

  it("rounds a Duration up to whole milliseconds", () => {
    const d = (seconds: bigint, nanos: number) => create(DurationSchema, { seconds, nanos });
    expect(durationToMillis(d(0n, 0))).toBe(0);
    expect(durationToMillis(d(0n, 1))).toBe(1);
    expect(durationToMillis(d(0n, 1_000_000))).toBe(1);
    expect(durationToMillis(d(0n, 1_000_001))).toBe(2);
    expect(durationToMillis(d(2n, 0))).toBe(2000);
    expect(durationToMillis(d(1n, 1))).toBe(1001);
  });

  it("formats a Timestamp as ISO 8601, and one outside Date's range as seconds", () => {
    expect(formatTimestamp(ts(1_767_225_600n, 123_456_789))).toBe("2026-01-01T00:00:00.123Z");
    expect(formatTimestamp(ts(-1n, 500_000_000))).toBe("1969-12-31T23:59:59.500Z");
    // Date's range ends at exactly 8.64e15 ms on both sides
    expect(formatTimestamp(ts(8_640_000_000_000n))).toBe("+275760-09-13T00:00:00.000Z");
    expect(formatTimestamp(ts(-8_640_000_000_000n))).toBe("-271821-04-20T00:00:00.000Z");
    expect(formatTimestamp(ts(8_640_000_000_001n))).toBe("8640000000001s");
    expect(formatTimestamp(ts(-8_640_000_000_001n))).toBe("-8640000000001s");
    expect(formatTimestamp(ts(10n ** 400n))).toBe(`${10n ** 400n}s`);
  });
});
