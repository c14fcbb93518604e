// Typed reading of vendor stream frames. Each adapter declares its vendor's events as zod
// schemas (a discriminated union on the event type where the vendor has one) and reads every
// frame through `readEvent`/`readValue`: the adapter then works on typed values, never on
// casts. Vendors add event types and occasionally send a frame that does not match what
// they document; neither may break a turn, so both are skipped and reported once per type
// at warn. Only the type name and the schema's complaint (paths and expected kinds) are
// logged, never the frame's content, which can hold the user's data.
import type * as z from "zod/mini";

/** The part of a plugin logger the wire reader needs. */
export interface WireLog {
  warn(message: string, attrs?: Record<string, unknown>): void;
}

/** Collects unknown and malformed frames for one vendor; each (kind, type) is logged once. */
export class WireNotices {
  readonly vendor: string;
  private readonly log: WireLog | undefined;
  private readonly seen: Set<string>;

  /** `seen` is shared across streams so a process logs each oddity once, not once per turn. */
  constructor(vendor: string, log: WireLog | undefined, seen: Set<string> = new Set()) {
    this.vendor = vendor;
    this.log = log;
    this.seen = seen;
  }

  /** A frame (or a part inside one) of a type the adapter's schema does not list. */
  unknown(type: string): void {
    this.once(`unknown:${type}`, "a stream event of an unknown type was skipped", { type });
  }

  /** A frame of a known type that does not match its schema. */
  malformed(type: string, error: z.core.$ZodError): void {
    this.once(`malformed:${type}`, "a stream event that does not match its schema was skipped", {
      type,
      issues: describeIssues(error),
    });
  }

  private once(key: string, message: string, attrs: Record<string, unknown>): void {
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.log?.warn(message, { vendor: this.vendor, ...attrs });
  }
}

/** "path: code (expected kind)" for each issue, without the offending values. */
function describeIssues(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.length > 0 ? i.path.join(".") : "(root)";
      const expected = "expected" in i && typeof i.expected === "string" ? ` (expected ${i.expected})` : "";
      return `${path}: ${i.code}${expected}`;
    })
    .join("; ");
}

/** A discriminated union's known values of its discriminator. */
function knownTypes(schema: z.ZodMiniType, key: string): ReadonlySet<unknown> | undefined {
  return (schema._zod as { propValues?: Record<string, Set<unknown>> }).propValues?.[key];
}

/**
 * One event through a discriminated union on `key` (default "type"): the typed event, or
 * undefined once the frame was reported as unknown (a type the union does not list) or as
 * malformed (a listed type that does not match).
 */
export function readEvent<S extends z.ZodMiniType>(
  schema: S,
  value: unknown,
  notices: WireNotices,
  key = "type",
): z.infer<S> | undefined {
  const type = typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined;
  const known = knownTypes(schema, key);
  if (known && !known.has(type)) {
    notices.unknown(typeof type === "string" ? type : `(${key} missing)`);
    return undefined;
  }
  return readValue(schema, value, typeof type === "string" ? type : "(untyped)", notices);
}

/** One value through a schema: typed, or undefined once reported as malformed `type`. */
export function readValue<S extends z.ZodMiniType>(
  schema: S,
  value: unknown,
  type: string,
  notices: WireNotices,
): z.infer<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  notices.malformed(type, result.error);
  return undefined;
}
