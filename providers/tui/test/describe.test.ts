import { describe, expect, it } from "vitest";
import { formatTokens, formatUsd } from "../src/describe.ts";

describe("formatting", () => {
  it("shows money with cents, and two significant digits below a cent", () => {
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(1.234)).toBe("$1.23");
    expect(formatUsd(0.0123)).toBe("$0.01");
    expect(formatUsd(0.00004)).toBe("$0.000040");
    expect(formatUsd(0.0042)).toBe("$0.0042");
  });

  it("abbreviates token counts", () => {
    expect(formatTokens(999)).toBe("999");
    expect(formatTokens(1234)).toBe("1.2k");
    expect(formatTokens(45_678)).toBe("46k");
    expect(formatTokens(2_500_000)).toBe("2.5M");
  });
});
