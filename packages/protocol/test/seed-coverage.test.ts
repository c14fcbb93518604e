// Holds docs/seed-coverage.md true: every seed type/field must exist in the generated
// descriptors with the declared type. Removing or retyping a field fails this test.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { protocolRegistry } from "../src/gen/registry.ts";

interface Row {
  seed: string;
  proto: string;
  type: string;
}

function readTable(): Row[] {
  const text = readFileSync(join(import.meta.dirname, "../../../docs/seed-coverage.md"), "utf8");
  const rows: Row[] = [];
  for (const line of text.split("\n")) {
    const m = /^\| (.+?) \| `([^`]+)` \| (.+?) \|$/.exec(line);
    if (m) rows.push({ seed: m[1]!, proto: m[2]!, type: m[3]! });
  }
  return rows;
}

function scalarName(t: ScalarType): string {
  return ScalarType[t]!.toLowerCase();
}

/** Renders a field's type in the table's notation. */
export function describeField(field: DescField): string {
  const qualifier = field.oneof
    ? `oneof ${field.oneof.name} `
    : field.proto.proto3Optional
      ? "optional "
      : "";
  switch (field.fieldKind) {
    case "scalar":
      return `${qualifier}${scalarName(field.scalar)}`;
    case "enum":
      return `${qualifier}enum ${field.enum.typeName}`;
    case "message":
      return `${qualifier}message ${field.message.typeName}`;
    case "list": {
      const el =
        field.listKind === "scalar"
          ? scalarName(field.scalar)
          : field.listKind === "enum"
            ? `enum ${field.enum.typeName}`
            : `message ${field.message.typeName}`;
      return `repeated ${el}`;
    }
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? scalarName(field.scalar)
          : field.mapKind === "enum"
            ? `enum ${field.enum.typeName}`
            : `message ${field.message.typeName}`;
      return `map ${scalarName(field.mapKey)} ${value}`;
    }
  }
}

function resolve(row: Row): string {
  const dot = row.proto.lastIndexOf(".");
  const owner = row.proto.slice(0, dot);
  const member = row.proto.slice(dot + 1);
  if (row.type.startsWith("enum value")) {
    const en = protocolRegistry.getEnum(owner) as DescEnum | undefined;
    if (!en) return `no enum ${owner}`;
    const value = en.values.find((v) => v.name === member);
    if (!value) return `no value ${member} in ${owner}`;
    const wantNumber = row.type.split(" ")[2];
    return wantNumber === undefined ? "enum value" : `enum value ${value.number}`;
  }
  const msg = protocolRegistry.getMessage(owner) as DescMessage | undefined;
  if (!msg) return `no message ${owner}`;
  const field = msg.fields.find((f) => f.name === member);
  if (!field) return `no field ${member} in ${owner}`;
  return describeField(field);
}

describe("seed coverage table", () => {
  const rows = readTable();

  it("lists the seed pages' types and fields", () => {
    expect(rows.length).toBeGreaterThan(200);
  });

  it.each(rows)("$seed → $proto", (row) => {
    expect(resolve(row)).toBe(row.type);
  });
});
