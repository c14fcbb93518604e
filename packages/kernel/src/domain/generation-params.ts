// GenerationParams validated against the resolved model before dispatch. Each parameter
// is accepted, dropped back to the model's default ("fell_back"), or rejected — and the
// result says which and why. Capability mismatches follow the caller's policy; malformed
// parameters (a tool_choice shape error, a non-positive max_output_tokens) are always
// rejected because there is no model default they could fall back to meaningfully.
import { clone } from "@bufbuild/protobuf";
import {
  type GenerationParams,
  GenerationParamsSchema,
  type ModelSpec,
  SamplingParameter,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";

export type SamplingParamName = "temperature" | "top_p" | "top_k";

const SAMPLING_CODE: Record<SamplingParamName, SamplingParameter> = {
  temperature: SamplingParameter.TEMPERATURE,
  top_p: SamplingParameter.TOP_P,
  top_k: SamplingParameter.TOP_K,
};

/**
 * Why `spec` does not take `param` for a request reasoning at `effort` (the requested
 * level, else the model's default effort); undefined when it does, or when the model
 * declares no sampling spec (then nothing is checked). The load-time check of a profile
 * applies the same rule (config's samplingRefusal; a test holds the two together).
 */
export function samplingRefusal(
  spec: ModelSpec,
  param: SamplingParamName,
  effort: string | undefined,
): string | undefined {
  const s = spec.sampling;
  if (!s) return undefined;
  if (!s.accepted.includes(SAMPLING_CODE[param])) return `${spec.id} does not accept ${param}`;
  if (s.onlyAtEffort.length > 0) {
    const inForce = effort ?? (spec.thinking?.supported ? spec.thinking.effort?.default : undefined);
    if (inForce === undefined || !s.onlyAtEffort.includes(inForce)) {
      const levels = s.onlyAtEffort.map((e) => `"${e}"`).join(", ");
      return `${spec.id} accepts ${param} only at thinking effort ${levels}${inForce !== undefined ? `, not "${inForce}"` : ""}`;
    }
  }
  return undefined;
}

export type ParamName =
  | "thinking_effort"
  | "thinking_budget_tokens"
  | "tool_choice"
  | "max_output_tokens"
  | SamplingParamName;

/** The sampling parameters a GenerationParams sets. */
export function samplingParamsSet(params: GenerationParams | undefined): SamplingParamName[] {
  if (!params) return [];
  const out: SamplingParamName[] = [];
  if (params.temperature !== undefined) out.push("temperature");
  if (params.topP !== undefined) out.push("top_p");
  if (params.topK !== undefined) out.push("top_k");
  return out;
}

export interface ParamDecision {
  readonly param: ParamName;
  readonly outcome: "accepted" | "fell_back" | "rejected";
  readonly reason: string;
}

export type ParamPolicy = "reject" | "fallback";

export interface GenerationParamsResult {
  /** rejected if any parameter was rejected; fell_back if any fell back; otherwise accepted. */
  readonly outcome: "accepted" | "fell_back" | "rejected";
  /** What to send (absent when rejected): unsupported parameters removed. */
  readonly params?: GenerationParams;
  readonly decisions: readonly ParamDecision[];
}

const MODE_NAMES: Record<number, string> = {
  [ToolChoiceMode.AUTO]: "AUTO",
  [ToolChoiceMode.ANY]: "ANY",
  [ToolChoiceMode.NONE]: "NONE",
  [ToolChoiceMode.SPECIFIC]: "SPECIFIC",
};

export interface ParamContext {
  /** Names of the tools declared in this request. */
  readonly toolNames: readonly string[];
  /** What to do with a parameter the model cannot honour. Default: reject. */
  readonly policy?: ParamPolicy;
}

export function validateGenerationParams(
  spec: ModelSpec,
  params: GenerationParams | undefined,
  ctx: ParamContext,
): GenerationParamsResult {
  if (!params) return { outcome: "accepted", decisions: [] };
  const policy = ctx.policy ?? "reject";
  const out = clone(GenerationParamsSchema, params);
  const decisions: ParamDecision[] = [];
  const accept = (param: ParamName, reason: string) => decisions.push({ param, outcome: "accepted", reason });
  const reject = (param: ParamName, reason: string) => decisions.push({ param, outcome: "rejected", reason });
  // A capability the model lacks: reject, or drop the parameter so the model default applies.
  const unsupported = (param: ParamName, reason: string, drop: () => void) => {
    if (policy === "reject") reject(param, reason);
    else {
      drop();
      decisions.push({ param, outcome: "fell_back", reason: `${reason}; the model's default applies` });
    }
  };
  const thinking = spec.thinking;

  if (params.thinkingEffort !== undefined) {
    const effort = thinking?.supported ? thinking.effort : undefined;
    if (!effort) {
      unsupported(
        "thinking_effort",
        `${spec.id} has no effort control`,
        () => (out.thinkingEffort = undefined),
      );
    } else if (!effort.levels.includes(params.thinkingEffort)) {
      unsupported(
        "thinking_effort",
        `"${params.thinkingEffort}" is not one of ${spec.id}'s effort levels (${effort.levels.join(", ")})`,
        () => (out.thinkingEffort = undefined),
      );
    } else accept("thinking_effort", `"${params.thinkingEffort}" is a declared effort level`);
  }

  if (params.thinkingBudgetTokens !== undefined) {
    const budget = thinking?.supported ? thinking.budget : undefined;
    const b = params.thinkingBudgetTokens;
    if (!budget?.range) {
      unsupported(
        "thinking_budget_tokens",
        `${spec.id} has no budget control`,
        () => (out.thinkingBudgetTokens = undefined),
      );
    } else if (b < budget.range.min || b > budget.range.max) {
      unsupported(
        "thinking_budget_tokens",
        `${b} lies outside ${spec.id}'s budget range ${budget.range.min}..${budget.range.max}`,
        () => (out.thinkingBudgetTokens = undefined),
      );
    } else {
      accept(
        "thinking_budget_tokens",
        budget.deprecated ? "within range (the budget control is deprecated)" : "within range",
      );
    }
  }

  if (params.maxOutputTokens !== undefined) {
    const m = params.maxOutputTokens;
    if (m <= 0n) reject("max_output_tokens", `${m} is not a positive token count`);
    else if (m > spec.maxOutputTokens) {
      unsupported(
        "max_output_tokens",
        `${m} exceeds ${spec.id}'s limit of ${spec.maxOutputTokens}`,
        () => (out.maxOutputTokens = undefined),
      );
    } else accept("max_output_tokens", `within ${spec.id}'s limit`);
  }

  // Sampling: a parameter the model refuses is never sent, whatever the policy; the model's
  // default applies instead (a load-time warning has said so, or strict_params refused it).
  // A model that declares no sampling spec is not checked (and gets no decision).
  for (const param of spec.sampling ? samplingParamsSet(params) : []) {
    const refusal = samplingRefusal(spec, param, out.thinkingEffort);
    if (refusal === undefined) {
      accept(param, `${spec.id} accepts ${param}`);
      continue;
    }
    if (param === "temperature") out.temperature = undefined;
    else if (param === "top_p") out.topP = undefined;
    else out.topK = undefined;
    decisions.push({
      param,
      outcome: "fell_back",
      reason: `${refusal}; not sent, the model's default applies`,
    });
  }

  const choice = params.toolChoice;
  if (choice) {
    const name = MODE_NAMES[choice.mode];
    if (!name) reject("tool_choice", "tool_choice.mode is unspecified");
    else if (choice.mode === ToolChoiceMode.SPECIFIC && !choice.toolName) {
      reject("tool_choice", "SPECIFIC needs a tool_name");
    } else if (choice.mode !== ToolChoiceMode.SPECIFIC && choice.toolName !== undefined) {
      reject("tool_choice", `tool_name must be omitted for mode ${name}`);
    } else if (choice.mode === ToolChoiceMode.SPECIFIC && !ctx.toolNames.includes(choice.toolName!)) {
      reject("tool_choice", `tool_name "${choice.toolName}" is not a tool of this request`);
    } else if (!spec.supportedToolChoiceModes.includes(choice.mode)) {
      // Falling back means AUTO, which is the same as sending no tool_choice at all.
      unsupported(
        "tool_choice",
        `${spec.id} does not support tool_choice mode ${name}`,
        () => (out.toolChoice = undefined),
      );
    } else accept("tool_choice", `mode ${name} is supported`);
  }

  const outcome = decisions.some((d) => d.outcome === "rejected")
    ? "rejected"
    : decisions.some((d) => d.outcome === "fell_back")
      ? "fell_back"
      : "accepted";
  return outcome === "rejected" ? { outcome, decisions } : { outcome, params: out, decisions };
}
