// Terraform-style version constraints: `=`, `!=`, `>`, `>=`, `<`, `<=`, `~>`,
// comma-joined. semver parses and orders versions; the constraint semantics are
// ours and follow Terraform's provider constraints:
// - a missing minor/patch is zero ("1.2" is 1.2.0) and no operator means "=";
// - `~> 1.2.3` lets only the last given part grow: >= 1.2.3, < 1.3.0;
//   `~> 1.2` means >= 1.2.0, < 2.0.0 and `~> 1` the same as `~> 1.0`;
// - a pre-release version is only ever selected by an exact `=` naming it.

import semver from "semver";

export type ConstraintOp = "=" | "!=" | ">" | ">=" | "<" | "<=" | "~>";

export interface VersionConstraint {
  op: ConstraintOp;
  /** Normalised to three parts, e.g. "1.2.0". */
  version: string;
  /** How many numeric parts were written (1-3); matters for `~>`. */
  parts: number;
  /** The constraint as written, trimmed. */
  text: string;
}

export interface ConstraintParseError {
  message: string;
  /** UTF-16 offset into the constraint string where the problem starts. */
  offset: number;
}

const OPS: readonly ConstraintOp[] = ["~>", ">=", "<=", "!=", "=", ">", "<"];
const VERSION = /^(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?(-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** Parses "~> 1.2, != 1.2.5". */
export function parseConstraints(
  text: string,
): { constraints: VersionConstraint[] } | { error: ConstraintParseError } {
  const constraints: VersionConstraint[] = [];
  let offset = 0;
  for (const piece of text.split(",")) {
    const lead = piece.length - piece.trimStart().length;
    const item = piece.trim();
    const at = offset + lead;
    offset += piece.length + 1;
    if (item === "") {
      return {
        error: {
          message:
            text.trim() === ""
              ? 'A version constraint cannot be empty; write e.g. "~> 1.0".'
              : "Empty constraint between commas.",
          offset: at,
        },
      };
    }
    const op = OPS.find((o) => item.startsWith(o));
    const rest = op === undefined ? item : item.slice(op.length);
    const versionText = rest.trim();
    const versionAt = at + (item.length - rest.length) + (rest.length - rest.trimStart().length);
    if (op === undefined && /^[^0-9]/.test(item)) {
      return {
        error: {
          message: `"${item}" does not start with a known operator (=, !=, >, >=, <, <=, ~>) or a version.`,
          offset: at,
        },
      };
    }
    if (/^[<>=!~]/.test(versionText)) {
      return {
        error: {
          message: `"${item}" uses an unknown operator; use one of =, !=, >, >=, <, <=, ~>.`,
          offset: at,
        },
      };
    }
    const m = VERSION.exec(versionText);
    if (m === null) {
      return {
        error: {
          message: `"${versionText}" is not a version: write MAJOR[.MINOR[.PATCH]][-PRERELEASE] without a "v" prefix.`,
          offset: versionAt,
        },
      };
    }
    const parts = m[3] !== undefined ? 3 : m[2] !== undefined ? 2 : 1;
    constraints.push({
      op: op ?? "=",
      version: `${m[1]}.${m[2] ?? "0"}.${m[3] ?? "0"}${m[4] ?? ""}`,
      parts,
      text: item,
    });
  }
  return { constraints };
}

function bump(v: semver.SemVer, parts: number): string {
  // Upper bound of `~>`: increment the part before the last written one.
  return parts >= 3 ? `${v.major}.${v.minor + 1}.0` : `${v.major + 1}.0.0`;
}

function holds(v: semver.SemVer, c: VersionConstraint): boolean {
  const cmp = semver.compare(v, c.version);
  switch (c.op) {
    case "=":
      return cmp === 0;
    case "!=":
      return cmp !== 0;
    case ">":
      return cmp > 0;
    case ">=":
      return cmp >= 0;
    case "<":
      return cmp < 0;
    case "<=":
      return cmp <= 0;
    case "~>": {
      const base = new semver.SemVer(c.version);
      return cmp >= 0 && semver.compare(v, bump(base, c.parts)) < 0;
    }
  }
}

/** Whether `version` (an exact semver, optional "v" prefix) satisfies every constraint. */
export function satisfies(version: string, constraints: readonly VersionConstraint[]): boolean {
  const v = semver.parse(version.replace(/^v/, ""));
  if (v === null) return false;
  if (v.prerelease.length > 0) {
    const named = constraints.some((c) => c.op === "=" && semver.eq(v, c.version));
    if (!named) return false;
  }
  return constraints.every((c) => holds(v, c));
}

/** The newest of `versions` that satisfies the constraints (unparsable entries are skipped). */
export function selectVersion(
  versions: readonly string[],
  constraints: readonly VersionConstraint[],
): string | undefined {
  const ok = versions.filter((v) => semver.valid(v.replace(/^v/, "")) !== null && satisfies(v, constraints));
  ok.sort((a, b) => semver.rcompare(a.replace(/^v/, ""), b.replace(/^v/, "")));
  return ok[0];
}

export function formatConstraints(constraints: readonly VersionConstraint[]): string {
  return constraints.map((c) => c.text).join(", ");
}
