// The policy engine: decides allow/ask/deny for one tool call.
//
// Three rule layers are consulted:
// - operator rules (agent.hcl) with the built-in defaults behind them;
// - ALWAYS rules (durable human verdicts, see policy-store.ts), filtered by profile;
// - SESSION rules (in-memory human verdicts for this session only).
// A human verdict (session first, then always) replaces the operator outcome
// unless the operator outcome is deny: remembered approvals can settle an `ask`,
// never lift an operator's `deny`. Within a layer the most specific rule wins;
// ties (rejected at load, so only reachable through runtime layers) go to the
// strictest action, then to the earliest rule. Finally an `ask` on a data_source
// or interactive call becomes `deny`, and the result says so.

import type { JsonObject } from "@bufbuild/protobuf";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import type { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { riskClassName, type ToolKindName, toolKindName } from "@pluggableharness/protocol/tool-names";
import {
  escapePathGlob,
  exactCommandPatterns,
  pathMatches,
  pathRelativeTo,
  pathWeight,
  patternMatchesArgv,
  patternWeight,
} from "./arg-match.ts";
import {
  BUILTIN_PIPE_TO_SHELL_RULE,
  builtinDefaultRules,
  builtinDenyRules,
  DOWNLOADERS,
  STDIN_INTERPRETERS,
} from "./builtin-rules.ts";
import type { PolicyAction, PolicyMatch, PolicyRule, RiskName } from "./model.ts";
import { compiledArgs, hasArgumentMatch, specificityRank } from "./policy.ts";
import type { SecretMask } from "./secret-mask.ts";
import { parseCommand, type SimpleCommand, shellQuote } from "./shell.ts";

export type CallKind = ToolKindName;

/** What policy sees of a call. `provider` is the required_providers local name. */
export interface PolicyCall {
  kind: CallKind;
  provider: string;
  tool_name: string;
  risk?: RiskName;
  /** The call's arguments: `command` and `path` are what argument-scoped rules test. */
  args?: JsonObject;
  /** What relative `path` arguments and path globs are relative to (the working directory). */
  cwd?: string;
}

export type PolicyLayer = "operator" | "always" | "session" | "default" | "builtin";

export interface PolicyEvaluation {
  decision: PolicyAction;
  /** The deciding rule's name, or "default" when no rule matched. */
  rule: string;
  layer: PolicyLayer;
  /** Present when a winning `ask` was turned into `deny` for a data_source/interactive call. */
  downgraded?: true;
  /** Why an argument-scoped allow did not settle the call (it stays an ask), or what a builtin deny found. */
  note?: string;
  /** The simple command that decided a compound shell command. */
  command?: string;
  /** The deciding rule tests arguments (a command pattern or path glob). */
  argumentScoped?: true;
}

function coveredBy(seg: SimpleCommand, allowed: ReadonlySet<SimpleCommand>): boolean {
  for (let s: SimpleCommand | undefined = seg; s; s = s.via) if (allowed.has(s)) return true;
  return false;
}

const STRICTNESS: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

/** One unit of evaluation: the call, narrowed to one simple command of its `command`. */
interface Unit {
  call: PolicyCall;
  /** undefined: the call has no command; null: it has one the reader could not take apart. */
  segment: SimpleCommand | null | undefined;
}

function scalarMatches(m: PolicyMatch, call: PolicyCall): boolean {
  return (
    (m.kind === undefined || m.kind === call.kind) &&
    (m.provider === undefined || m.provider === call.provider) &&
    (m.tool_name === undefined || m.tool_name === call.tool_name) &&
    (m.risk === undefined || m.risk === call.risk)
  );
}

/** The weight of the argument pattern that matches `unit`, or -1 when none does. */
function argumentWeight(m: PolicyMatch, unit: Unit): number {
  if (!hasArgumentMatch(m)) return 0;
  const c = compiledArgs(m);
  if (c.command) {
    const seg = unit.segment;
    if (!seg || seg.argv.length === 0) return -1;
    let best = -1;
    for (const p of c.command) if (patternMatchesArgv(p, seg.argv)) best = Math.max(best, patternWeight(p));
    return best;
  }
  const path = unit.call.args?.["path"];
  if (typeof path !== "string" || path === "" || path.includes("\0")) return -1;
  let best = -1;
  for (const p of c.path!)
    if (pathMatches(p, unit.call.cwd ?? process.cwd(), path)) best = Math.max(best, pathWeight(p));
  return best;
}

function unitMatches(m: PolicyMatch, unit: Unit): boolean {
  return scalarMatches(m, unit.call) && argumentWeight(m, unit) >= 0;
}

/** Whether `m` matches the call (for a shell command: at least one of its simple commands). */
export function matchesCall(m: PolicyMatch, call: PolicyCall): boolean {
  return unitsOf(call).some((u) => unitMatches(m, u));
}

const ORIGIN_PRIORITY: Record<string, number> = { operator: 1, always: 1, session: 1, builtin: 0 };

function better(r: PolicyRule, rw: number, best: PolicyRule, bw: number): boolean {
  const d = specificityRank(r.match) - specificityRank(best.match);
  if (d !== 0) return d > 0;
  if (rw !== bw) return rw > bw;
  // An operator's rule beats a built-in one of equal rank: that is how a default is overridden.
  const o = (ORIGIN_PRIORITY[r.origin] ?? 1) - (ORIGIN_PRIORITY[best.origin] ?? 1);
  if (o !== 0) return o > 0;
  const s = STRICTNESS[r.action] - STRICTNESS[best.action];
  return s > 0 || (s === 0 && r.order < best.order);
}

function mostSpecificFor(rules: readonly PolicyRule[], unit: Unit): PolicyRule | undefined {
  let best: PolicyRule | undefined;
  let bestWeight = 0;
  for (const r of rules) {
    if (!scalarMatches(r.match, unit.call)) continue;
    const w = argumentWeight(r.match, unit);
    if (w < 0) continue;
    if (best === undefined || better(r, w, best, bestWeight)) {
      best = r;
      bestWeight = w;
    }
  }
  return best;
}

/** The most specific matching rule; ties go to the strictest action, then the earliest. */
export function mostSpecific(rules: readonly PolicyRule[], call: PolicyCall): PolicyRule | undefined {
  let out: PolicyRule | undefined;
  for (const u of unitsOf(call)) {
    const r = mostSpecificFor(rules, u);
    if (r && (!out || STRICTNESS[r.action] > STRICTNESS[out.action])) out = r;
  }
  return out;
}

function unitsOf(call: PolicyCall): Unit[] {
  const command = call.args?.["command"];
  if (typeof command !== "string") return [{ call, segment: undefined }];
  const parsed = parseCommand(command);
  if (parsed.opaque || parsed.commands.length === 0) return [{ call, segment: null }];
  return parsed.commands.map((segment) => ({ call, segment }));
}

export function defaultAction(kind: CallKind): PolicyAction {
  return kind === "resource" ? "ask" : "allow";
}

export interface PolicyEngineOptions {
  /** Durable ALWAYS rules (from the policy store). */
  alwaysRules?: readonly PolicyRule[];
  /** The session's profile: ALWAYS rules recorded under another profile are ignored. */
  profile?: string;
  /** The built-in rule set (builtin-rules.ts); default true. */
  builtinRules?: boolean;
}

function commandText(seg: SimpleCommand | null | undefined): string | undefined {
  if (!seg) return undefined;
  return seg.argv.map((w) => shellQuote(w.text)).join(" ");
}

export class PolicyEngine {
  readonly operatorRules: readonly PolicyRule[];
  private readonly always: PolicyRule[];
  private readonly session: PolicyRule[] = [];
  private readonly profile: string | undefined;
  private readonly builtin: boolean;
  private readonly denyLayer: readonly PolicyRule[];
  private readonly defaults: readonly PolicyRule[];

  constructor(operatorRules: readonly PolicyRule[], options: PolicyEngineOptions = {}) {
    this.operatorRules = [...operatorRules];
    this.profile = options.profile;
    this.builtin = options.builtinRules !== false;
    this.always = (options.alwaysRules ?? []).filter((r) => this.appliesToProfile(r));
    this.denyLayer = this.builtin ? [...this.operatorRules, ...builtinDenyRules()] : this.operatorRules;
    this.defaults = this.builtin ? builtinDefaultRules() : [];
  }

  private appliesToProfile(r: PolicyRule): boolean {
    return r.profile === undefined || this.profile === undefined || r.profile === this.profile;
  }

  /**
   * The decision for a call. A shell command is judged one simple command at a time and
   * the strictest answer wins, so `ls && rm -rf x` is as strict as `rm -rf x`.
   */
  evaluate(call: PolicyCall): PolicyEvaluation {
    let worst: PolicyEvaluation | undefined;
    // A wrapper (`env X=1 cmd`, `sh -c '…'`) that a rule allows by its exact words covers
    // what it wraps (the rule named the whole command), except a deny of the inner command.
    const allowedExplicitly = new Set<SimpleCommand>();
    for (const u of unitsOf(call)) {
      const via = u.segment?.via;
      const r = this.evaluateUnit(u);
      if (via && coveredBy(via, allowedExplicitly) && r.decision !== "deny") {
        if (u.segment) allowedExplicitly.add(u.segment);
        continue;
      }
      if (r.decision === "allow" && r.argumentScoped && u.segment) allowedExplicitly.add(u.segment);
      if (!worst || STRICTNESS[r.decision] > STRICTNESS[worst.decision]) worst = r;
    }
    const result = worst!;
    if (call.kind !== "resource" && result.decision === "ask") {
      return { ...result, decision: "deny", downgraded: true };
    }
    return result;
  }

  private evaluateUnit(u: Unit): PolicyEvaluation {
    const seg = u.segment;
    const text = commandText(seg);
    const withCommand = (e: PolicyEvaluation): PolicyEvaluation =>
      text === undefined ? e : { ...e, command: text };
    if (this.builtin && seg?.pipedFrom && DOWNLOADERS.has(seg.pipedFrom)) {
      const name = seg.argv[0] && !seg.argv[0].dynamic ? seg.argv[0].text.split("/").pop()! : "";
      if (STDIN_INTERPRETERS.has(name) && seg.argv.slice(1).every((w) => w.text.startsWith("-"))) {
        const op = mostSpecificFor(this.operatorRules, u);
        if (!op || !hasArgumentMatch(op.match)) {
          return withCommand({
            decision: "deny",
            rule: BUILTIN_PIPE_TO_SHELL_RULE,
            layer: "builtin",
            note: `output of ${seg.pipedFrom} is piped into ${name} (critical)`,
          });
        }
      }
    }
    const op = mostSpecificFor(this.denyLayer, u);
    let result: PolicyEvaluation;
    if (op !== undefined) {
      result = {
        decision: op.action,
        rule: op.name,
        layer: op.origin === "builtin" ? "builtin" : "operator",
        ...(op.origin === "builtin" && op.action === "deny" ? { note: "a critical command" } : {}),
        ...(hasArgumentMatch(op.match) ? { argumentScoped: true as const } : {}),
      };
    } else {
      const d = mostSpecificFor(this.defaults, u);
      result = d
        ? { decision: d.action, rule: d.name, layer: "builtin" }
        : { decision: defaultAction(u.call.kind), rule: "default", layer: "default" };
      if (d) result = this.capUnsafe(result, d, seg);
    }
    if (op !== undefined) result = this.capUnsafe(result, op, seg);
    const human = mostSpecificFor(this.session, u) ?? mostSpecificFor(this.always, u);
    if (human !== undefined && human.action !== "ask" && result.decision !== "deny") {
      result = this.capUnsafe(
        {
          decision: human.action,
          rule: human.name,
          layer: human.origin === "session" ? "session" : "always",
          ...(hasArgumentMatch(human.match) ? { argumentScoped: true as const } : {}),
        },
        human,
        seg,
      );
    }
    return withCommand(result);
  }

  /**
   * An argument-scoped allow covers the command it names, not a form of it that writes
   * a file through a redirection or changes the environment it runs in.
   */
  private capUnsafe(
    e: PolicyEvaluation,
    rule: PolicyRule,
    seg: SimpleCommand | null | undefined,
  ): PolicyEvaluation {
    if (e.decision !== "allow" || !seg || rule.match.command === undefined) return e;
    if (seg.writes.length > 0) {
      return {
        ...e,
        decision: "ask",
        note: `it redirects output into ${seg.writes.map((w) => w.text).join(", ")}`,
      };
    }
    if (seg.assignments > 0) return { ...e, decision: "ask", note: "it sets variables for the command" };
    return e;
  }

  /**
   * Remembers a SESSION-scoped human verdict for later calls of the same (provider,
   * tool_name) within `scope` (argument patterns; none: every call of the tool); a newer
   * verdict for the same scope replaces the older one.
   */
  rememberForSession(
    provider: string,
    tool_name: string,
    decision: "allow" | "deny",
    scope: ArgumentScope = {},
  ): PolicyRule {
    const rule = humanRule("session", provider, tool_name, decision, this.session.length, undefined, scope);
    const i = this.session.findIndex((r) => r.name === rule.name);
    if (i >= 0) this.session.splice(i, 1, { ...rule, order: this.session[i]!.order });
    else this.session.push(rule);
    return rule;
  }

  /** Adds (or replaces, by name) an ALWAYS rule, e.g. right after the store recorded it. */
  addAlwaysRule(rule: PolicyRule): void {
    if (!this.appliesToProfile(rule)) return;
    const i = this.always.findIndex((r) => r.name === rule.name);
    if (i >= 0) this.always.splice(i, 1, rule);
    else this.always.push(rule);
  }

  /** The SESSION verdicts remembered so far. */
  sessionRules(): readonly PolicyRule[] {
    return this.session;
  }

  /** The ALWAYS rules that apply to this engine's profile. */
  alwaysRules(): readonly PolicyRule[] {
    return this.always;
  }

  /**
   * Drops a remembered SESSION verdict or an ALWAYS rule by name (the operator revoked
   * it); answers the rule, or undefined when there is none by that name.
   */
  forget(name: string): PolicyRule | undefined {
    for (const list of [this.session, this.always]) {
      const i = list.findIndex((r) => r.name === name);
      if (i >= 0) return list.splice(i, 1)[0];
    }
    return undefined;
  }

  /** A new engine with the same operator and ALWAYS rules and no SESSION verdicts (e.g. a sub-agent). */
  forSession(profile?: string): PolicyEngine {
    return new PolicyEngine(this.operatorRules, {
      alwaysRules: this.always,
      profile: profile ?? this.profile,
      builtinRules: this.builtin,
    });
  }
}

/** The argument part of a remembered verdict. */
export type ArgumentScope = Pick<PolicyMatch, "command" | "path">;

/** Credentials with a recognisable shape (vendor API keys, tokens, private keys). */
const SECRET_SHAPE =
  /\b(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|xai-[A-Za-z0-9]{20,})|-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** What a SESSION or ALWAYS answer to a call would remember: the narrowest rules covering it. */
export type RememberScope =
  | { ok: true; scopes: ArgumentScope[]; description: string }
  | { ok: false; reason: string };

/**
 * The narrowest rules covering this call: for a shell command, one per simple command it
 * runs, each matching exactly that command; for a file tool, exactly its path; otherwise
 * the tool itself.
 */
export function narrowestScope(
  call: PolicyCall,
  options: { secretValues?: readonly string[]; secretMask?: SecretMask } = {},
): RememberScope {
  const what = `${call.provider}.${call.tool_name}`;
  // A rule is written to disk and shown in prompts: never one carrying a secret, in any
  // encoding the mask knows.
  const text = JSON.stringify(call.args ?? {});
  if (
    (options.secretValues ?? []).some((v) => v.length >= 8 && text.includes(v)) ||
    options.secretMask?.contains(text) ||
    SECRET_SHAPE.test(text)
  ) {
    return {
      ok: false,
      reason: "the arguments contain what looks like a secret, which a remembered rule would store on disk",
    };
  }
  const command = call.args?.["command"];
  if (typeof command === "string") {
    const patterns = exactCommandPatterns(command);
    if (patterns === undefined) {
      return {
        ok: false,
        reason:
          "this command computes part of what it runs when it runs (variables, substitutions, eval) or cannot be read, so only this one call can be allowed or denied",
      };
    }
    return {
      ok: true,
      scopes: patterns.map((p) => ({ command: [p] })),
      description:
        patterns.length === 1
          ? `${what} running exactly: ${patterns[0]}`
          : `${what} running exactly these commands, alone or combined: ${patterns.join(" · ")}`,
    };
  }
  const path = call.args?.["path"];
  if (typeof path === "string" && path !== "" && !path.includes("\0")) {
    const { absolute, relative } = pathRelativeTo(call.cwd ?? process.cwd(), path);
    const shown = relative ?? absolute;
    return {
      ok: true,
      scopes: [{ path: [escapePathGlob(shown)] }],
      description: `${what} on exactly ${shown}`,
    };
  }
  return { ok: true, scopes: [{}], description: `every ${what} call` };
}

function scopeLabel(scope: ArgumentScope): string {
  if (scope.command) return `[${scope.command.join(" · ")}]`;
  if (scope.path) return `[${scope.path.join(" · ")}]`;
  return "";
}

/** The rule a human verdict turns into: one (provider, tool_name), narrowed by `scope`. */
export function humanRule(
  origin: "session" | "always",
  provider: string,
  tool_name: string,
  action: "allow" | "deny",
  order: number,
  profile?: string,
  scope: ArgumentScope = {},
): PolicyRule {
  const match: PolicyMatch = { provider, tool_name };
  if (scope.command) match.command = [...scope.command];
  if (scope.path) match.path = [...scope.path];
  const rule: PolicyRule = {
    name: `${origin}:${profile === undefined ? "" : `${profile}:`}${provider}.${tool_name}${scopeLabel(scope)}`,
    match,
    action,
    origin,
    order,
  };
  if (profile !== undefined) rule.profile = profile;
  return rule;
}

// ---- conversions to and from the wire enums ----------------------------------

/** A tool kind's name as policy rules write it (one table: protocol's tool-names.ts). */
export const callKindOf: (kind: ToolKind) => CallKind | undefined = toolKindName;

/** A risk class's name as policy rules write it. */
export const riskNameOf: (risk: RiskClass) => RiskName | undefined = riskClassName;

export function toPlanDecision(action: PolicyAction): PlanDecision {
  return action === "allow" ? PlanDecision.ALLOW : action === "ask" ? PlanDecision.ASK : PlanDecision.DENY;
}
