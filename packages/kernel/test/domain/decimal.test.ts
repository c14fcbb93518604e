import { describe, expect, it } from "vitest";
import {
  addDecimals,
  decimalFromNumber,
  decimalToNumber,
  formatDecimal,
  isDecimalString,
  parseDecimal,
  scaleDecimal,
} from "../../src/domain/decimal.ts";

describe("exact decimals", () => {
  it("parses plain and exponent notation exactly", () => {
    expect(parseDecimal("12")).toEqual({ numerator: 12n, scale: 0 });
    expect(parseDecimal(" -0.50 ")).toEqual({ numerator: -50n, scale: 2 });
    expect(parseDecimal("1.5e3")).toEqual({ numerator: 1500n, scale: 0 });
    expect(parseDecimal("1E2")).toEqual({ numerator: 100n, scale: 0 });
    expect(parseDecimal("1.25e-2")).toEqual({ numerator: 125n, scale: 4 });
    expect(parseDecimal("125e-1")).toEqual({ numerator: 125n, scale: 1 });
    expect(parseDecimal("2.5e+1")).toEqual({ numerator: 25n, scale: 0 });
    expect(parseDecimal("-3e0")).toEqual({ numerator: -3n, scale: 0 });
  });

  it("refuses anything but a decimal number, quoting it", () => {
    for (const bad of ["", "1.", ".5", "1e", "abc", "--1", "+1", "1.2.3", "0x10"]) {
      expect(() => parseDecimal(bad), bad).toThrow(
        new RangeError(`not a decimal number: ${JSON.stringify(bad)}`),
      );
    }
  });

  it("takes a double as the decimal it prints as, refusing non-finite ones", () => {
    expect(decimalFromNumber(0.1)).toEqual({ numerator: 1n, scale: 1 });
    expect(decimalFromNumber(5e-7)).toEqual({ numerator: 5n, scale: 7 });
    expect(decimalFromNumber(1e21)).toEqual({ numerator: 10n ** 21n, scale: 0 });
    expect(decimalFromNumber(-2.5)).toEqual({ numerator: -25n, scale: 1 });
    for (const x of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(() => decimalFromNumber(x)).toThrow(new RangeError(`not a finite number: ${x}`));
    }
  });

  it("accepts only plain decimal strings as exact amounts", () => {
    for (const ok of ["0", "12", "-0.5", "10.25", "0.000001"]) expect(isDecimalString(ok), ok).toBe(true);
    for (const bad of ["", "1.", ".5", "1e3", "+1", "12a", " 1", "1.2.3", "-", "1,5"])
      expect(isDecimalString(bad), bad).toBe(false);
  });

  it("adds, scales and formats without rounding", () => {
    expect(addDecimals({ numerator: 15n, scale: 1 }, { numerator: 25n, scale: 2 })).toEqual({
      numerator: 175n,
      scale: 2,
    });
    expect(scaleDecimal({ numerator: 3n, scale: 0 }, 552n, 6)).toEqual({ numerator: 1656n, scale: 6 });
    expect(formatDecimal({ numerator: 1656n, scale: 6 })).toBe("0.001656");
    expect(formatDecimal({ numerator: 1500n, scale: 3 })).toBe("1.5");
    expect(formatDecimal({ numerator: 1000n, scale: 3 })).toBe("1");
    expect(formatDecimal({ numerator: 0n, scale: 2 })).toBe("0");
    expect(formatDecimal({ numerator: -15n, scale: 1 })).toBe("-1.5");
    expect(formatDecimal({ numerator: -1n, scale: 3 })).toBe("-0.001");
    expect(formatDecimal({ numerator: -7n, scale: 0 })).toBe("-7");
    expect(decimalToNumber({ numerator: -1656n, scale: 6 })).toBe(-0.001656);
  });
});
