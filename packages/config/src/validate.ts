// The second validation pass, run by the kernel once every plugin has answered
// GetSchema/GetCapabilities: profile tool patterns, model references and hook
// subscriptions are checked against what the loaded providers actually offer.

import type { HookPoint } from "@pluggableharness/protocol/common";
import { type ModelSpec, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { type ConfigDiagnostic, errorAt, warningAt } from "./diagnostics.ts";
import { hookPointName } from "./hooks.ts";
import type { AgentConfig, AgentProfile, HookPointName, ModelRef } from "./model.ts";
import { samplingParamsOf, samplingRefusal } from "./sampling.ts";
import { decodeProviderConfig, type SchemaLike } from "./schema-bridge.ts";
import type { Environment } from "./secrets.ts";

const TOOL_CHOICE_WIRE = {
  auto: ToolChoiceMode.AUTO,
  any: ToolChoiceMode.ANY,
  none: ToolChoiceMode.NONE,
  specific: ToolChoiceMode.SPECIFIC,
} as const;
const TOOL_CHOICE_NAMES = new Map<ToolChoiceMode, string>(
  Object.entries(TOOL_CHOICE_WIRE).map(([name, mode]) => [mode, `"${name}"`]),
);

/** What one loaded provider advertised. Absent lists mean "this provider offers none". */
export interface ProviderFacts {
  /** Tool (operation) names from GetSchema. */
  tools?: readonly string[];
  /** Model ids from GetCapabilities. */
  models?: readonly string[];
  /** The ModelSpecs behind `models`, when known: a profile's parameters are checked against them. */
  specs?: readonly ModelSpec[];
  /** supported_hook_points, as names ("plan-ready") or wire enum values. */
  hookPoints?: ReadonlyArray<HookPointName | HookPoint>;
  /** When given, the provider block is decoded against it (secrets resolved, then dropped). */
  configSchema?: SchemaLike;
  /** Names of the slash commands it declares (without the slash). */
  slashCommands?: readonly string[];
  /**
   * Why it offers no operations this time although they come from its configuration (an MCP
   * server that did not start or cannot be reached): a profile pattern naming it then matches
   * nothing without being an error, since the name is right and the server may be back later.
   */
  unavailable?: string;
}

/**
 * Why a provider whose operations come from its configuration offers none once configured
 * (its Configure warnings say why: an MCP server that did not start), or undefined when it
 * offers some or its operations are static. The kernel and `agent validate` both decide
 * with this, so a dead server never fails one and passes the other.
 */
export function unavailableReason(
  operationsFromConfig: boolean,
  operations: number,
  configureWarnings: readonly string[],
): string | undefined {
  if (!operationsFromConfig || operations > 0) return undefined;
  return configureWarnings.join("; ") || "it offers no tools";
}

/** Keyed by required_providers local name; only providers that actually loaded. */
export type LoadedProviders = Readonly<Record<string, ProviderFacts>>;

export function validateAgainstProviders(
  config: AgentConfig,
  loaded: LoadedProviders,
  env?: Environment,
): ConfigDiagnostic[] {
  const diags: ConfigDiagnostic[] = [];
  const facts = (name: string) => (Object.hasOwn(loaded, name) ? loaded[name] : undefined);

  for (const profile of config.profiles) {
    for (const t of profile.tools) {
      const f = facts(t.provider);
      if (f === undefined) continue; // not loaded this session: a silent no-op
      if (f.unavailable !== undefined) continue; // said once where it was found unavailable
      const tools = f.tools ?? [];
      if (tools.length === 0) {
        diags.push(
          errorAt(
            "unknown_tool",
            "Provider has no tools",
            `agent_profile "${profile.name}" lists "${t.text}", but "${t.provider}" advertises no tools.`,
            t.range,
          ),
        );
        continue;
      }
      if (t.tool !== "*" && !tools.includes(t.tool)) {
        diags.push(
          errorAt(
            "unknown_tool",
            "Unknown tool",
            `agent_profile "${profile.name}" lists "${t.text}", but "${t.provider}" has no tool "${t.tool}". Its tools: ${tools.join(", ")}.`,
            t.range,
          ),
        );
      }
    }
    if (profile.model) {
      for (const m of [profile.model.primary, ...profile.model.fallbacks]) {
        const f = facts(m.provider);
        if (f === undefined) continue;
        const models = f.models ?? [];
        const spec = f.specs?.find((x) => x.id === m.id);
        if (spec) diags.push(...unsupportedParams(profile, m, spec, config.settings.strict_params));
        if (!models.includes(m.id)) {
          diags.push(
            warningAt(
              "unknown_model",
              "Unknown model",
              `agent_profile "${profile.name}" routes to "${m.provider}/${m.id}", which "${m.provider}" does not advertise${models.length === 0 ? "" : ` (it offers ${models.join(", ")})`}; the candidate will be skipped.`,
              m.range,
            ),
          );
        }
      }
    }
  }

  for (const h of config.hooks) {
    const f = facts(h.provider);
    if (f === undefined) continue;
    const points = (f.hookPoints ?? []).map((p) => (typeof p === "number" ? hookPointName(p) : p));
    if (!points.includes(h.point)) {
      diags.push(
        errorAt(
          "hook_point",
          "Hook point not supported",
          `"${h.provider}" does not support the "${h.point}" hook point${points.length === 0 ? " (it supports none)" : ` (it supports ${points.join(", ")})`}.`,
          h.range,
        ),
      );
    }
  }

  // A slash command name declared by two providers is ambiguous: an error at the later
  // provider's required_providers entry, naming the earlier one (frontend protocol).
  const owners = new Map<string, string>();
  const ordered = config.requiredProviders.filter((r) => facts(r.localName) !== undefined);
  for (const r of ordered) {
    for (const command of new Set(facts(r.localName)!.slashCommands ?? [])) {
      const first = owners.get(command);
      if (first === undefined) {
        owners.set(command, r.localName);
        continue;
      }
      const at = config.requiredProviders.find((x) => x.localName === first)!;
      diags.push(
        errorAt(
          "duplicate",
          "Slash command declared twice",
          `"${r.localName}" and "${first}" (${at.range.filename}:${at.range.start.line}:${at.range.start.column}) both declare the slash command /${command}; a name must be unique across the loaded providers. Remove one of them from required_providers, or rename the command.`,
          r.range,
        ),
      );
    }
  }

  for (const [name, f] of Object.entries(loaded)) {
    if (f.configSchema === undefined) continue;
    if (!config.requiredProviders.some((r) => r.localName === name)) continue;
    const r = decodeProviderConfig(config, name, f.configSchema, env);
    if (!r.ok) diags.push(...r.diagnostics);
  }
  return diags;
}

/**
 * Sampling parameters a candidate sets that its model refuses: a warning (the parameter is
 * never sent; the model's default applies), or with settings.strict_params an error.
 */
function unsupportedParams(
  profile: AgentProfile,
  m: ModelRef,
  spec: ModelSpec,
  strict: boolean,
): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  // A tool_choice the model cannot honour is always an error: the kernel would not send the
  // request with it (routing skips the candidate), so the profile could never run as written.
  const choice = m.params.tool_choice;
  if (choice !== undefined) {
    const mode = TOOL_CHOICE_WIRE[choice.mode];
    if (!spec.supportedToolChoiceModes.includes(mode)) {
      const supported = spec.supportedToolChoiceModes
        .map((x) => TOOL_CHOICE_NAMES.get(x))
        .filter((x) => x !== undefined);
      out.push(
        errorAt(
          "unsupported_parameter",
          "tool_choice not supported by the model",
          `agent_profile "${profile.name}" sets tool_choice ${choice.mode === "specific" ? `"${choice.provider}.${choice.tool}" (a specific tool)` : `"${choice.mode}"`} for "${m.provider}/${m.id}", which supports ${supported.length === 0 ? "no tool_choice constraint at all" : `only ${supported.join(", ")}`} (supported_tool_choice_modes).`,
          m.paramRanges?.tool_choice ?? m.range,
        ),
      );
    }
  }
  for (const param of samplingParamsOf(m.params)) {
    const refusal = samplingRefusal(spec, param, m.params.thinking_effort);
    if (refusal === undefined) continue;
    const range = m.paramRanges?.[param] ?? m.range;
    const what = `agent_profile "${profile.name}" sets ${param} for "${m.provider}/${m.id}", but ${refusal}`;
    out.push(
      strict
        ? errorAt(
            "unsupported_parameter",
            "Parameter not accepted by the model",
            `${what}. Remove it (settings.strict_params is on).`,
            range,
          )
        : warningAt(
            "unsupported_parameter",
            "Parameter not accepted by the model",
            `${what}; it will not be sent (set settings.strict_params = true to make this an error).`,
            range,
          ),
    );
  }
  return out;
}

/** The profile a session runs with; "default" falls back to the kernel's built-in root profile. */
export function getProfile(config: AgentConfig, name = "default"): AgentProfile | undefined {
  const found = config.profiles.find((p) => p.name === name);
  if (found !== undefined || name !== "default") return found;
  return builtinRootProfile(config);
}

/**
 * The stand-in for a missing `agent_profile "default"`: every tool of every
 * declared provider, no slash-command restriction beyond the strict default,
 * and no model (the kernel picks the first model its loaded providers offer).
 */
export function builtinRootProfile(config: AgentConfig): AgentProfile {
  const range = {
    filename: config.file,
    start: { line: 1, column: 1, byte: 0 },
    end: { line: 1, column: 1, byte: 0 },
  };
  return {
    name: "default",
    tools: config.requiredProviders.map((r) => ({
      provider: r.localName,
      tool: "*",
      text: `${r.localName}.*`,
      range,
    })),
    slash_commands: [],
    declared: false,
  };
}

/** The concrete (provider, tool) pairs a profile may use, given what loaded. */
export function resolveProfileTools(
  profile: AgentProfile,
  loaded: LoadedProviders,
): Array<{ provider: string; tool: string }> {
  const out: Array<{ provider: string; tool: string }> = [];
  const seen = new Set<string>();
  for (const t of profile.tools) {
    const f = Object.hasOwn(loaded, t.provider) ? loaded[t.provider] : undefined;
    if (f === undefined) continue;
    const names = t.tool === "*" ? (f.tools ?? []) : (f.tools ?? []).filter((n) => n === t.tool);
    for (const tool of names) {
      const key = `${t.provider}\u0000${tool}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ provider: t.provider, tool });
    }
  }
  return out;
}
