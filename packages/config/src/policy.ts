// `policy "<name>" { match = {...}, action = "..." }` blocks and load-time
// conflict detection (configuration/policy-dsl.md).

import type { Block } from "@pluggableharness/hcl";
import { type Diags, decodeBody, label, objectEntries, readEnum, readString } from "./decode.ts";
import { errorAt, warningAt } from "./diagnostics.ts";
import type { MatchKind, PolicyAction, PolicyMatch, PolicyOrigin, PolicyRule, RiskName } from "./model.ts";

export const POLICY_ACTIONS: readonly PolicyAction[] = ["allow", "ask", "deny"];
export const MATCH_KINDS: readonly MatchKind[] = ["resource", "data_source"];
export const RISK_NAMES: readonly RiskName[] = ["read_only", "low", "moderate", "high", "critical"];
const MATCH_FIELDS = ["kind", "provider", "tool_name", "risk"] as const;

/** Fields in specificity order, most specific first. */
export const SPECIFICITY_ORDER = ["tool_name", "provider", "risk", "kind"] as const;

export type SpecificityTuple = [boolean, boolean, boolean, boolean];

export function specificity(m: PolicyMatch): SpecificityTuple {
  return [m.tool_name !== undefined, m.provider !== undefined, m.risk !== undefined, m.kind !== undefined];
}

/** The tuple as a number: comparing ranks compares tuples lexicographically. */
export function specificityRank(m: PolicyMatch): number {
  return specificity(m).reduce((acc, bit) => acc * 2 + (bit ? 1 : 0), 0);
}

/**
 * Whether two matches conflict: identical specificity tuples and, on every field
 * both specify, equal values. Actions play no part (policy-dsl.md).
 */
export function matchesConflict(a: PolicyMatch, b: PolicyMatch): boolean {
  for (const f of SPECIFICITY_ORDER) {
    if ((a[f] !== undefined) !== (b[f] !== undefined)) return false;
    if (a[f] !== undefined && a[f] !== b[f]) return false;
  }
  return true;
}

/** Every conflicting pair, earlier rule first, in declaration order. */
export function findPolicyConflicts(rules: readonly PolicyRule[]): Array<[PolicyRule, PolicyRule]> {
  const out: Array<[PolicyRule, PolicyRule]> = [];
  for (let j = 0; j < rules.length; j++) {
    for (let i = 0; i < j; i++) {
      if (matchesConflict(rules[i]!.match, rules[j]!.match)) out.push([rules[i]!, rules[j]!]);
    }
  }
  return out;
}

export function describeMatch(m: PolicyMatch): string {
  const parts = MATCH_FIELDS.filter((f) => m[f] !== undefined).map((f) => `${f} = "${m[f]}"`);
  return parts.length === 0 ? "{}" : `{ ${parts.join(", ")} }`;
}

/** Load-time conflict diagnostics, reported at the later rule of each pair. */
export function conflictDiagnostics(rules: readonly PolicyRule[], diags: Diags): void {
  for (const [a, b] of findPolicyConflicts(rules)) {
    const at = b.range ?? a.range;
    if (at === undefined) continue;
    const where = a.range === undefined ? "" : ` (line ${a.range.start.line})`;
    const actions = a.action === b.action ? `both "${a.action}"` : `"${a.action}" vs "${b.action}"`;
    diags.push(
      errorAt(
        "policy_conflict",
        `Policy "${b.name}" conflicts with policy "${a.name}"`,
        `Policies "${a.name}"${where} and "${b.name}" match ${describeMatch(b.match)} with the same specificity (actions ${actions}), so neither is more specific. Make one of them more specific or remove one.`,
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
    if (entries !== undefined && entries.length === 0) {
      diags.push(
        warningAt(
          "policy_empty_match",
          `Policy "${name}" matches every call`,
          "An empty match applies to all tool calls; this is usually a mistake. Add kind, provider, tool_name or risk.",
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
