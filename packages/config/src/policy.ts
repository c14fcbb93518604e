// `policy "<name>" { match = {...}, action = "..." }` blocks and load-time
// conflict detection (configuration/policy-dsl.md).

import type { Block } from "@pluggableharness/hcl";
import {
  type CommandPattern,
  canonicalPattern,
  type PathPattern,
  PatternError,
  parseCommandPattern,
  parsePathPattern,
  pathPatternsEqual,
  patternsOverlap,
  patternWeight,
} from "./arg-match.ts";
import {
  type Diags,
  decodeBody,
  describe,
  evalStatic,
  label,
  objectEntries,
  readEnum,
  readString,
} from "./decode.ts";
import { errorAt, warningAt } from "./diagnostics.ts";
import type { MatchKind, PolicyAction, PolicyMatch, PolicyOrigin, PolicyRule, RiskName } from "./model.ts";

export const POLICY_ACTIONS: readonly PolicyAction[] = ["allow", "ask", "deny"];
export const MATCH_KINDS: readonly MatchKind[] = ["resource", "data_source"];
export const RISK_NAMES: readonly RiskName[] = ["read_only", "low", "moderate", "high", "critical"];
const SCALAR_FIELDS = ["kind", "provider", "tool_name", "risk"] as const;
const ARGUMENT_FIELDS = ["command", "path"] as const;
const MATCH_FIELDS = [...SCALAR_FIELDS, ...ARGUMENT_FIELDS] as const;

/**
 * Fields in specificity order, most specific first. The spec's tuple is
 * (tool_name, provider, risk, kind); an argument field (`command` or `path`) narrows a
 * rule below one tool, so it ranks above all four.
 */
export const SPECIFICITY_ORDER = ["tool_name", "provider", "risk", "kind"] as const;

/** The spec's tuple: (tool_name, provider, risk, kind) specified. */
export type SpecificityTuple = [boolean, boolean, boolean, boolean];

export function hasArgumentMatch(m: PolicyMatch): boolean {
  return m.command !== undefined || m.path !== undefined;
}

export function specificity(m: PolicyMatch): SpecificityTuple {
  return [m.tool_name !== undefined, m.provider !== undefined, m.risk !== undefined, m.kind !== undefined];
}

/**
 * The tuple as a number, with "has an argument field" above all four bits: comparing
 * ranks compares (argument, tool_name, provider, risk, kind) lexicographically.
 */
export function specificityRank(m: PolicyMatch): number {
  return specificity(m).reduce((acc, bit) => acc * 2 + (bit ? 1 : 0), hasArgumentMatch(m) ? 1 : 0);
}

/** Compiled argument patterns, cached per match object. */
export interface CompiledArgs {
  command?: CommandPattern[];
  path?: PathPattern[];
}

const compiled = new WeakMap<PolicyMatch, CompiledArgs>();

/** The match's argument patterns, compiled (they were validated when the rule was decoded). */
export function compiledArgs(m: PolicyMatch): CompiledArgs {
  let c = compiled.get(m);
  if (c === undefined) {
    c = {};
    if (m.command !== undefined) c.command = m.command.map(parseCommandPattern);
    if (m.path !== undefined) c.path = m.path.map(parsePathPattern);
    compiled.set(m, c);
  }
  return c;
}

/** A call that two rules both match, described, when their argument patterns overlap. */
function argumentOverlap(
  a: PolicyMatch,
  b: PolicyMatch,
): { example: string; identical: boolean } | undefined {
  if ((a.command !== undefined) !== (b.command !== undefined)) return undefined;
  if ((a.path !== undefined) !== (b.path !== undefined)) return undefined;
  const ca = compiledArgs(a);
  const cb = compiledArgs(b);
  if (ca.command && cb.command) {
    for (const pa of ca.command) {
      for (const pb of cb.command) {
        // Different weights never tie: the heavier pattern is the more specific one.
        if (patternWeight(pa) !== patternWeight(pb)) continue;
        const w = patternsOverlap(pa, pb);
        if (w)
          return {
            example: `command "${w.join(" ")}"`,
            identical: canonicalPattern(pa) === canonicalPattern(pb),
          };
      }
    }
    return undefined;
  }
  if (ca.path && cb.path) {
    for (const pa of ca.path) {
      for (const pb of cb.path) {
        if (pathPatternsEqual(pa, pb)) return { example: `path "${pa.source}"`, identical: true };
      }
    }
    return undefined;
  }
  return { example: "", identical: true };
}

/**
 * Whether two matches conflict: identical specificity tuples and, on every field
 * both specify, equal values (policy-dsl.md); for argument fields, patterns of equal
 * weight that can match one same call. Actions play no part.
 */
export function matchesConflict(a: PolicyMatch, b: PolicyMatch): boolean {
  return conflictOf(a, b) !== undefined;
}

function conflictOf(a: PolicyMatch, b: PolicyMatch): { example: string; identical: boolean } | undefined {
  for (const f of SPECIFICITY_ORDER) {
    if ((a[f] !== undefined) !== (b[f] !== undefined)) return undefined;
    if (a[f] !== undefined && a[f] !== b[f]) return undefined;
  }
  return argumentOverlap(a, b);
}

/** Every conflicting pair, earlier rule first, in declaration order. */
export function findPolicyConflicts(rules: readonly PolicyRule[]): Array<[PolicyRule, PolicyRule]> {
  return findConflicts(rules).map(([a, b]) => [a, b]);
}

function findConflicts(
  rules: readonly PolicyRule[],
): Array<[PolicyRule, PolicyRule, { example: string; identical: boolean }]> {
  const out: Array<[PolicyRule, PolicyRule, { example: string; identical: boolean }]> = [];
  for (let j = 0; j < rules.length; j++) {
    for (let i = 0; i < j; i++) {
      const c = conflictOf(rules[i]!.match, rules[j]!.match);
      if (c) out.push([rules[i]!, rules[j]!, c]);
    }
  }
  return out;
}

export function describeMatch(m: PolicyMatch): string {
  const parts = MATCH_FIELDS.filter((f) => m[f] !== undefined).map((f) => {
    const v = m[f]!;
    return Array.isArray(v)
      ? `${f} = ${v.length === 1 ? JSON.stringify(v[0]) : `[${v.map((x) => JSON.stringify(x)).join(", ")}]`}`
      : `${f} = "${v}"`;
  });
  return parts.length === 0 ? "{}" : `{ ${parts.join(", ")} }`;
}

/**
 * Load-time conflict diagnostics, reported at the later rule of each pair. Under
 * most-specific-wins a rule can only be hidden by one of equal rank matching the same
 * calls: identical argument patterns make the later rule `policy_shadowed` (it could
 * never decide anything), overlapping ones `policy_conflict`.
 */
export function conflictDiagnostics(rules: readonly PolicyRule[], diags: Diags): void {
  for (const [a, b, c] of findConflicts(rules)) {
    const at = b.range ?? a.range;
    if (at === undefined) continue;
    const where = a.range === undefined ? "" : ` (line ${a.range.start.line})`;
    const actions = a.action === b.action ? `both "${a.action}"` : `"${a.action}" vs "${b.action}"`;
    const argumentScoped = hasArgumentMatch(b.match);
    if (argumentScoped && c.identical) {
      diags.push(
        errorAt(
          "policy_shadowed",
          `Policy "${b.name}" is shadowed by policy "${a.name}"`,
          `Policies "${a.name}"${where} and "${b.name}" match the same calls (${c.example}) with the same specificity (actions ${actions}), so "${b.name}" could never decide anything. Remove one or narrow it.`,
          at,
        ),
      );
      continue;
    }
    diags.push(
      errorAt(
        "policy_conflict",
        `Policy "${b.name}" conflicts with policy "${a.name}"`,
        `Policies "${a.name}"${where} and "${b.name}" match ${argumentScoped ? `one same call (${c.example})` : describeMatch(b.match)} with the same specificity (actions ${actions}), so neither is more specific. Make one of them more specific or remove one.`,
        at,
      ),
    );
  }
}

export interface PolicyDecodeOptions {
  origin: PolicyOrigin;
  /** Accept a `profile` attribute (the ALWAYS store). */
  allowProfile?: boolean;
}

/** Decodes one policy block; problems go to `diags`. */
export function decodePolicyBlock(
  block: Block,
  order: number,
  options: PolicyDecodeOptions,
  diags: Diags,
): PolicyRule | undefined {
  const { value: name, range: nameRange } = label(block);
  const owner = `policy "${name}"`;
  const errorsBefore = diags.filter((d) => d.severity === "error").length;
  const body = decodeBody(
    block.body,
    {
      attributes: options.allowProfile === true ? ["match", "action", "profile"] : ["match", "action"],
      required: ["match", "action"],
    },
    block.typeRange,
    owner,
    diags,
  );
  if (name.trim() === "") {
    diags.push(errorAt("invalid_value", "Empty policy name", "A policy needs a non-empty name.", nameRange));
  }
  const match: PolicyMatch = {};
  const matchAttr = body.attrs.get("match");
  if (matchAttr !== undefined) {
    const entries = objectEntries(matchAttr.expr, `the match of ${owner}`, diags);
    for (const e of entries ?? []) {
      if (!(MATCH_FIELDS as readonly string[]).includes(e.key)) {
        diags.push(
          errorAt(
            "unknown_attribute",
            "Unsupported match field",
            `A policy can match on ${MATCH_FIELDS.map((f) => `"${f}"`).join(", ")}, not "${e.key}".`,
            e.keyRange,
          ),
        );
        continue;
      }
      const fake = {
        kind: "Attribute" as const,
        name: e.key,
        nameRange: e.keyRange,
        expr: e.value,
        range: e.range,
      };
      const what = `match.${e.key}`;
      if (e.key === "command" || e.key === "path") {
        const v = evalStatic(e.value, diags);
        if (v === undefined) continue;
        const list = typeof v === "string" ? [v] : Array.isArray(v) ? v : undefined;
        if (list === undefined || list.length === 0 || list.some((x) => typeof x !== "string")) {
          diags.push(
            errorAt(
              "type",
              `Invalid ${what}`,
              `${what} must be a string or a non-empty list of strings, not ${describe(v)}.`,
              e.value.range,
            ),
          );
          continue;
        }
        const texts = list as string[];
        let ok = true;
        for (const t of texts) {
          try {
            if (e.key === "command") parseCommandPattern(t);
            else parsePathPattern(t);
          } catch (err) {
            if (!(err instanceof PatternError)) throw err;
            ok = false;
            diags.push(errorAt("invalid_value", `Invalid ${what}`, err.message, e.value.range));
          }
        }
        if (ok) match[e.key] = texts;
        continue;
      }
      if (e.key === "kind") {
        const v = readEnum(fake, what, MATCH_KINDS, diags, (s) =>
          s === "interactive"
            ? 'Policies cannot match kind "interactive" (a v1 limitation); target interactive calls through tool_name, provider or risk.'
            : undefined,
        );
        if (v !== undefined) match.kind = v;
      } else if (e.key === "risk") {
        const v = readEnum(fake, what, RISK_NAMES, diags);
        if (v !== undefined) match.risk = v;
      } else {
        const v = readString(fake, what, diags);
        if (v === undefined) continue;
        if (v === "") {
          diags.push(
            errorAt(
              "invalid_value",
              "Empty match value",
              `${what} cannot be empty; omit the field to match anything.`,
              e.value.range,
            ),
          );
          continue;
        }
        if (e.key === "provider") match.provider = v;
        else match.tool_name = v;
      }
    }
    if (match.command !== undefined && match.path !== undefined) {
      diags.push(
        errorAt(
          "invalid_value",
          "A policy matches command or path, not both",
          "No tool takes both a shell command and a file path; split the rule in two.",
          matchAttr.expr.range,
        ),
      );
    }
    if (entries !== undefined && entries.length === 0) {
      diags.push(
        warningAt(
          "policy_empty_match",
          `Policy "${name}" matches every call`,
          "An empty match applies to all tool calls; this is usually a mistake. Add kind, provider, tool_name, risk, command or path.",
          matchAttr.expr.range,
        ),
      );
    }
  }
  const actionAttr = body.attrs.get("action");
  const action = actionAttr === undefined ? undefined : readEnum(actionAttr, "action", POLICY_ACTIONS, diags);
  const profileAttr = body.attrs.get("profile");
  const profile = profileAttr === undefined ? undefined : readString(profileAttr, "profile", diags);
  const errorsAfter = diags.filter((d) => d.severity === "error").length;
  if (errorsAfter > errorsBefore || action === undefined) return undefined;
  const rule: PolicyRule = { name, match, action, origin: options.origin, order, range: nameRange };
  if (profile !== undefined) rule.profile = profile;
  return rule;
}
