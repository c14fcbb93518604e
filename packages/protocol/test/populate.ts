// Builds fully populated protobuf-es messages from nothing but their descriptors, for
// round-trip tests: every scalar gets a non-default value, every optional and message
// field is set, lists and maps get two entries, and each oneof member is exercised in
// one of the instances populateVariants returns.
//
// Values stay valid for the well-known types (a Timestamp's nanos are within range, a
// Struct holds JSON values), so the result also survives toJson/fromJson. Recursive
// types are cut off: once a message type already occurs maxDepth times on the path
// from the root, a further singular occurrence is an empty message and a further
// list or map of it stays empty.
import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";

export interface PopulateOptions {
  /** How often one message type may occur on a root-to-leaf path before recursion stops. Default 2. */
  maxDepth?: number;
}

/** How many instances it takes to exercise every member of every oneof: the largest oneof's size, at least 1. */
export function variantCount(desc: DescMessage): number {
  return Math.max(1, ...desc.oneofs.map((o) => o.fields.length));
}

/**
 * One fully populated instance per variant. In instance i, each oneof is set to its
 * member i (wrapping around for smaller oneofs); all other fields are set in every instance.
 */
export function populateVariants<Desc extends DescMessage>(
  desc: Desc,
  options: PopulateOptions = {},
): MessageShape<Desc>[] {
  const out: MessageShape<Desc>[] = [];
  for (let v = 0; v < variantCount(desc); v++) out.push(populate(desc, v, options));
  return out;
}

/** A fully populated instance whose oneofs take their member number `variant` (modulo size). */
export function populate<Desc extends DescMessage>(
  desc: Desc,
  variant = 0,
  options: PopulateOptions = {},
): MessageShape<Desc> {
  const builder = new Builder(options.maxDepth ?? 2);
  return builder.message(desc, variant).message as MessageShape<Desc>;
}

class Builder {
  readonly maxDepth: number;
  readonly path = new Map<string, number>();

  constructor(maxDepth: number) {
    this.maxDepth = maxDepth;
  }

  /** Whether another level of this type may still be populated on the current path. */
  canDescend(desc: DescMessage): boolean {
    return (this.path.get(desc.typeName) ?? 0) < this.maxDepth;
  }

  /** A populated message, or an empty one when the type is already too deep on the path. */
  message(desc: DescMessage, variant: number): ReflectMessage {
    const r = reflect(desc);
    if (!this.canDescend(desc)) return r;
    this.path.set(desc.typeName, (this.path.get(desc.typeName) ?? 0) + 1);
    try {
      if (desc.typeName === "google.protobuf.Timestamp" || desc.typeName === "google.protobuf.Duration") {
        // Keep well-known time types inside their valid ranges.
        r.set(desc.field["seconds"]!, 1_700_000_000n + BigInt(variant));
        r.set(desc.field["nanos"]!, 123_000_000 + variant);
        return r;
      }
      for (const field of desc.fields) {
        if (field.oneof) {
          const chosen = field.oneof.fields[variant % field.oneof.fields.length];
          if (chosen !== field) continue;
        }
        this.setField(r, field, variant);
      }
      return r;
    } finally {
      this.path.set(desc.typeName, (this.path.get(desc.typeName) ?? 1) - 1);
    }
  }

  setField(r: ReflectMessage, field: DescField, variant: number): void {
    switch (field.fieldKind) {
      case "scalar":
        r.set(field, scalarValue(field.scalar, field.number + variant));
        return;
      case "enum":
        r.set(field, enumValue(field.enum, variant));
        return;
      case "message":
        r.set(field, this.message(field.message, variant));
        return;
      case "list": {
        const list = r.get(field);
        for (let i = 0; i < 2; i++) {
          if (field.listKind === "scalar") list.add(scalarValue(field.scalar, field.number + i));
          else if (field.listKind === "enum") list.add(enumValue(field.enum, i));
          else if (this.canDescend(field.message)) list.add(this.message(field.message, i));
        }
        return;
      }
      case "map": {
        const map = r.get(field);
        for (let i = 0; i < 2; i++) {
          const key = mapKey(field.mapKey, i);
          if (field.mapKind === "scalar") map.set(key, scalarValue(field.scalar, field.number + i));
          else if (field.mapKind === "enum") map.set(key, enumValue(field.enum, i));
          else if (this.canDescend(field.message)) map.set(key, this.message(field.message, i));
        }
        return;
      }
    }
  }
}

/** A non-default enum value (cycling through the non-zero values), or 0 when that is all there is. */
function enumValue(desc: DescEnum, index: number): number {
  const nonZero = desc.values.filter((v) => v.number !== 0);
  if (nonZero.length === 0) return desc.values[0]!.number;
  return nonZero[index % nonZero.length]!.number;
}

/** A non-default value of the scalar type; `seed` (always >= 1) varies it between fields. */
function scalarValue(type: ScalarType, seed: number): unknown {
  switch (type) {
    case ScalarType.STRING:
      return `value-${seed} ✓`;
    case ScalarType.BYTES:
      return new Uint8Array([0, 255, seed & 0xff]);
    case ScalarType.BOOL:
      return true;
    case ScalarType.DOUBLE:
      return seed + 0.25;
    case ScalarType.FLOAT:
      // Exactly representable in 32 bits, so it survives the float round trip.
      return seed + 0.5;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return -seed;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return 4_000_000_000 + seed;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      // Beyond 2^53, to catch precision loss.
      return -(2n ** 60n) - BigInt(seed);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return 2n ** 63n + BigInt(seed);
  }
}

/** Distinct map keys of the given key type. */
function mapKey(type: ScalarType, index: number): unknown {
  if (type === ScalarType.STRING) return `key-${index}`;
  if (type === ScalarType.BOOL) return index % 2 === 0;
  return scalarValue(type, index + 1);
}
