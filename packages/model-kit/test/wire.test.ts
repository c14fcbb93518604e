// The typed wire reader: unknown and malformed frames are skipped, reported once per type,
// and the report never carries the frame's content.
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { readEvent, readValue, WireNotices } from "../src/index.ts";

const Event = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("stop") }),
]);

describe("wire reader", () => {
  it("types known events, skips unknown and malformed ones, and logs each type once without its data", () => {
    const lines: Array<{ message: string; attrs?: Record<string, unknown> }> = [];
    const seen = new Set<string>();
    const notices = () =>
      new WireNotices("v", { warn: (message, attrs) => lines.push({ message, attrs }) }, seen);
    const first = notices();
    expect(readEvent(Event, { type: "text", text: "hi", extra: 1 }, first)).toEqual({
      type: "text",
      text: "hi",
      extra: 1,
    });
    expect(readEvent(Event, { type: "future", secret: "sk-live-SECRET" }, first)).toBeUndefined();
    expect(readEvent(Event, { type: "text", text: "sk-live-SECRET".length }, first)).toBeUndefined();
    // A second stream of the same process: the same oddities are not logged again.
    const second = notices();
    expect(readEvent(Event, { type: "future" }, second)).toBeUndefined();
    expect(readEvent(Event, { type: "text", text: 1 }, second)).toBeUndefined();
    expect(readEvent(Event, "not an object", second)).toBeUndefined();
    expect(readValue(z.string(), 3, "name", second)).toBeUndefined();
    expect(lines.map((l) => [l.message, l.attrs?.["type"]])).toEqual([
      ["a stream event of an unknown type was skipped", "future"],
      ["a stream event that does not match its schema was skipped", "text"],
      ["a stream event of an unknown type was skipped", "(type missing)"],
      ["a stream event that does not match its schema was skipped", "name"],
    ]);
    expect(lines[1]!.attrs).toEqual({
      vendor: "v",
      type: "text",
      issues: "text: invalid_type (expected string)",
    });
    expect(JSON.stringify(lines)).not.toContain("SECRET");
  });
});
