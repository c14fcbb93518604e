import { describe, expect, it } from "vitest";
import {
  cookieMatches,
  cookieMismatchMessage,
  formatProtocolVersions,
  negotiateVersion,
  PLUGGABLEHARNESS_COOKIE,
  parseProtocolVersions,
} from "../src/index.ts";

describe("version negotiation", () => {
  it("parses the host's unordered comma list, skipping junk", () => {
    expect(parseProtocolVersions("3,1, 2")).toEqual([3, 1, 2]);
    expect(parseProtocolVersions("1,x,-2,0,4")).toEqual([1, 4]);
    expect(parseProtocolVersions(undefined)).toEqual([]);
    expect(parseProtocolVersions("")).toEqual([]);
    expect(formatProtocolVersions([1, 2])).toBe("1,2");
  });

  it("picks the highest common version", () => {
    expect(negotiateVersion([1, 2, 3], [2, 3, 4])).toBe(3);
    expect(negotiateVersion([3, 1], [1, 3])).toBe(3);
  });

  it("answers its lowest version when nothing is common, or the host sent nothing", () => {
    expect(negotiateVersion([5], [2, 3])).toBe(2);
    expect(negotiateVersion([], [3, 2])).toBe(2);
  });

  it("requires the plugin to speak something", () => {
    expect(() => negotiateVersion([1], [])).toThrow();
  });
});

describe("magic cookie", () => {
  it("matches only the exact value", () => {
    const { key, value } = PLUGGABLEHARNESS_COOKIE;
    expect(cookieMatches({ [key]: value }, PLUGGABLEHARNESS_COOKIE)).toBe(true);
    expect(cookieMatches({ [key]: `${value}x` }, PLUGGABLEHARNESS_COOKIE)).toBe(false);
    expect(cookieMatches({}, PLUGGABLEHARNESS_COOKIE)).toBe(false);
  });

  it("explains itself to someone who ran the plugin by hand", () => {
    const msg = cookieMismatchMessage(PLUGGABLEHARNESS_COOKIE);
    expect(msg).toContain("not meant to be run directly");
    expect(msg).toContain(PLUGGABLEHARNESS_COOKIE.key);
    expect(msg).not.toContain(PLUGGABLEHARNESS_COOKIE.value);
  });
});
