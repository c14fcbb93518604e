// Exact decimal arithmetic for money: a value is numerator / 10^scale with a bigint
// numerator, so sums of token counts times per-million rates are computed without
// binary rounding and converted to a double exactly once, at the end.

export interface Decimal {
  readonly numerator: bigint;
  readonly scale: number;
}

const DECIMAL_RE = /^(-)?(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/** The exact decimal a finite double prints as (its shortest round-trip form). */
export function decimalFromNumber(x: number): Decimal {
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  return parseDecimal(String(x));
}

export function parseDecimal(text: string): Decimal {
  const m = DECIMAL_RE.exec(text.trim());
  if (!m) throw new RangeError(`not a decimal number: ${JSON.stringify(text)}`);
  const frac = m[3] ?? "";
  let numerator = BigInt(m[2]! + frac);
  let scale = frac.length - Number(m[4] ?? 0);
  if (scale < 0) {
    numerator *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { numerator: m[1] ? -numerator : numerator, scale };
}

export function isDecimalString(text: string): boolean {
  return /^-?\d+(\.\d+)?$/.test(text);
}

function rescale(d: Decimal, scale: number): bigint {
  return d.numerator * 10n ** BigInt(scale - d.scale);
}

export function addDecimals(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { numerator: rescale(a, scale) + rescale(b, scale), scale };
}

/** count * d / 10^shift, exactly. */
export function scaleDecimal(d: Decimal, count: bigint, shift: number): Decimal {
  return { numerator: d.numerator * count, scale: d.scale + shift };
}

/** Plain decimal notation without trailing zeros, e.g. "0.001656". */
export function formatDecimal(d: Decimal): string {
  const negative = d.numerator < 0n;
  const digits = (negative ? -d.numerator : d.numerator).toString().padStart(d.scale + 1, "0");
  const intPart = digits.slice(0, digits.length - d.scale);
  const fracPart = digits.slice(digits.length - d.scale).replace(/0+$/, "");
  const body = fracPart ? `${intPart}.${fracPart}` : intPart;
  return negative && body !== "0" ? `-${body}` : body;
}

/** The double nearest to the exact decimal. */
export function decimalToNumber(d: Decimal): number {
  return Number(formatDecimal(d));
}
