import { describe, expect, it } from "vitest";
import { formatHclogLine, hclogTimestamp, LineSplitter, parseLogLine } from "../src/index.ts";

const now = new Date("2030-01-02T03:04:05.678Z");

describe("plugin log lines", () => {
  it("reads hclog JSON lines with their level, module, timestamp and fields", () => {
    const line = parseLogLine(
      '{"@level":"warn","@message":"retrying","@module":"anthropic.retry","@timestamp":"2025-06-01T10:00:00.123456Z","attempt":2}',
      "debug",
      now,
    );
    expect(line).toEqual({
      level: "warn",
      logger: "anthropic.retry",
      message: "retrying",
      fields: { attempt: 2 },
      time: new Date("2025-06-01T10:00:00.123Z"),
      structured: true,
    });
  });

  it("reads plain lines, [LEVEL] prefixes and Go panics", () => {
    expect(parseLogLine("just text", "debug", now)).toMatchObject({
      level: "debug",
      message: "just text",
      structured: false,
      time: now,
    });
    expect(parseLogLine("[ERROR] disk full", "debug", now)).toMatchObject({
      level: "error",
      message: "disk full",
    });
    expect(parseLogLine("[TRACE] x", "info", now)).toMatchObject({ level: "trace", message: "x" });
    expect(parseLogLine("panic: runtime error", "debug", now).level).toBe("error");
    expect(parseLogLine("fatal error: all goroutines are asleep", "debug", now).level).toBe("error");
  });

  it("treats JSON that is not an object, or broken JSON, as plain text", () => {
    expect(parseLogLine("{not json}", "info", now)).toMatchObject({
      structured: false,
      message: "{not json}",
    });
    expect(parseLogLine('{"@level":"bogus","@message":"m"}', "debug", now).level).toBe("info");
  });

  it("writes lines hclog and our parser read back", () => {
    const text = formatHclogLine(
      "error",
      "boom",
      { code: 7, "@level": "spoof", err: new Error("inner") },
      "plugin.x",
      now,
    );
    const parsed = JSON.parse(text);
    expect(parsed["@level"]).toBe("error");
    expect(parsed.err).toBe("inner");
    expect(parseLogLine(text, "debug")).toMatchObject({
      level: "error",
      message: "boom",
      logger: "plugin.x",
      fields: { code: 7 },
    });
    expect(parseLogLine(text, "debug").time.getTime()).toBe(now.getTime());
  });

  it("uses hclog's microsecond timestamp layout", () => {
    expect(hclogTimestamp(now)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/);
    expect(new Date(hclogTimestamp(now)).getTime()).toBe(now.getTime());
  });

  it("splits chunks into lines without breaking multi-byte characters, and caps line length", () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l), 8);
    const bytes = Buffer.from("héllo\nworld\n");
    s.push(bytes.subarray(0, 2));
    s.push(bytes.subarray(2));
    s.push("0123456789abc");
    s.flush();
    expect(lines).toEqual(["héllo", "world", "01234567", "89abc"]);
  });
});
