// How risky one spawn is. A spawn-capable tool declares the risk of its mildest spawn
// (a child that can only read, or whose every write waits for a human); the kernel
// raises a call to critical when the profile it names has unattended write access
// (the seed's example of a critical resource). The kernel only ever raises a declared
// risk, and RunSession then holds the plugin to the very profile the risk was rated by.
import type { JsonObject } from "@bufbuild/protobuf";
import { type AgentProfile, getProfile, type PolicyRule, riskNameOf } from "@pluggableharness/config";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import type { LoopDeps } from "../loop/deps.ts";
import type { SessionTool } from "../loop/tool-registry.ts";
import { ToolRegistry } from "../loop/tool-registry.ts";

/** The child's remaining depth budget (subagents.md#depth-limits). */
export function childRemainingDepth(parentRemaining: number, profile: AgentProfile): number {
  return Math.min(parentRemaining - 1, profile.max_depth ?? Number.POSITIVE_INFINITY);
}

/** The profile a spawn call names, when the tool is spawn-capable and the argument is a string. */
export function spawnedProfileName(tool: SessionTool, args: JsonObject): string | undefined {
  const field = tool.tool.schema.spawns?.profileField;
  if (!field) return undefined;
  const v = args[field];
  return typeof v === "string" ? v : undefined;
}

/** A rule that may allow a resource call of this tool without a human, whatever its arguments. */
function mayAllow(rule: PolicyRule, provider: string, tool: string, risk: string | undefined): boolean {
  const m = rule.match;
  return (
    rule.action === "allow" &&
    (m.kind === undefined || m.kind === "resource") &&
    (m.provider === undefined || m.provider === provider) &&
    (m.tool_name === undefined || m.tool_name === tool) &&
    (m.risk === undefined || m.risk === risk)
  );
}

/**
 * Whether a session of `profile` could change something with no human deciding: one of
 * its resource tools is allowed by policy (by default or by a rule, argument-scoped ones
 * included), or an ask would be settled by the headless rule `allow`.
 */
export function unattendedWriteAccess(
  deps: LoopDeps,
  profile: AgentProfile,
  remainingDepth: number,
): boolean {
  const tools = ToolRegistry.forProfile(profile, deps.providers, { spawn: remainingDepth > 0 });
  const policy = deps.policy.forSession(profile.name);
  for (const t of tools.all()) {
    const schema = t.tool.schema;
    if (schema.kind !== ToolKind.RESOURCE) continue;
    const risk = riskNameOf(schema.risk);
    const verdict = policy.evaluate({
      kind: "resource",
      provider: t.provider.name,
      tool_name: schema.name,
      ...(risk ? { risk } : {}),
      args: {},
    });
    if (verdict.decision === "allow") return true;
    if (verdict.decision === "ask" && deps.headlessAsk === "allow") return true;
    if (deps.config.policies.some((r) => mayAllow(r, t.provider.name, schema.name, risk))) return true;
  }
  return false;
}

/** The risk policy, plan and hooks see for one call: the declared one, raised for a writer spawn. */
export function callRisk(
  deps: LoopDeps,
  session: { readonly remainingDepth: number },
  tool: SessionTool,
  args: JsonObject,
): RiskClass {
  const declared = tool.tool.schema.risk;
  const name = spawnedProfileName(tool, args);
  if (name === undefined || declared === RiskClass.CRITICAL) return declared;
  const profile = getProfile(deps.config, name);
  // An unknown profile is refused by RunSession; rate it as the worst case meanwhile.
  if (!profile) return RiskClass.CRITICAL;
  const depth = childRemainingDepth(session.remainingDepth, profile);
  return unattendedWriteAccess(deps, profile, depth) ? RiskClass.CRITICAL : declared;
}
