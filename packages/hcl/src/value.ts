// The value model: plain JavaScript values. Numbers are IEEE-754 doubles
// (the source text of a literal stays available as `NumberLiteral.raw`).

export type Value = string | number | boolean | null | Value[] | ValueObject;
export interface ValueObject {
  [key: string]: Value;
}

export function isObject(v: Value): v is ValueObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Sets an own property even for keys such as "__proto__". */
export function setKey(obj: ValueObject, key: string, value: Value): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function hasKey(obj: ValueObject, key: string): boolean {
  return Object.hasOwn(obj, key);
}

/** HCL's name for the type of a value, for messages. */
export function typeName(v: Value): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "tuple";
  if (typeof v === "object") return "object";
  return typeof v === "boolean" ? "bool" : typeof v;
}

/** Structural equality; numbers compare by value, no type conversion. */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (typeof a === "number" && typeof b === "number") return a === b;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => valuesEqual(x, b[i]!));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => hasKey(b, k) && valuesEqual(a[k]!, b[k]!));
  }
  return false;
}

/**
 * Renders a number the way HCL prints it in strings: plain decimal notation
 * (never an exponent), using the shortest digits that identify the double.
 */
export function formatNumber(n: number): string {
  if (Object.is(n, -0)) return "0";
  const s = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (m === null) return s;
  const [, sign, lead, frac = "", expText] = m;
  const digits = lead! + frac;
  const exp = Number(expText);
  // The decimal point sits after `1 + exp` digits.
  const point = 1 + exp;
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

const NUMERIC = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/** A string that spells a number converts to it, as in HCL's type conversion. */
export function toNumber(v: Value): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "string" && NUMERIC.test(v)) return Number(v);
  return undefined;
}

export function toBool(v: Value): boolean | undefined {
  if (typeof v === "boolean") return v;
  if (v === "true") return true;
  if (v === "false") return false;
  return undefined;
}

/** Primitive-to-string conversion used by templates and object keys. */
export function toStringValue(v: Value): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  return undefined;
}
