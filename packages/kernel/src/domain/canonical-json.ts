// Canonical JSON: object keys sorted by code unit, no whitespace. Two values that are
// equal as JSON always produce the same string, whatever order their keys were built in.
import type { JsonValue } from "@bufbuild/protobuf";

export function canonicalJson(value: JsonValue | undefined): string {
  if (value === undefined) return "undefined";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(",")}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = (value as { [k: string]: JsonValue })[k];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(",")}}`;
}
