// The spec's names of tool.v1's RiskClass and ToolKind values, as policy rules, the TUI and
// the headless printers write them: one table, so a value added to the contract is named once.
import { RiskClass, ToolKind } from "./gen/tool.ts";

export type RiskName = "read_only" | "low" | "moderate" | "high" | "critical";
export type ToolKindName = "resource" | "data_source" | "interactive";

const RISKS: Record<number, RiskName> = {
  [RiskClass.READ_ONLY]: "read_only",
  [RiskClass.LOW]: "low",
  [RiskClass.MODERATE]: "moderate",
  [RiskClass.HIGH]: "high",
  [RiskClass.CRITICAL]: "critical",
};

const KINDS: Record<number, ToolKindName> = {
  [ToolKind.RESOURCE]: "resource",
  [ToolKind.DATA_SOURCE]: "data_source",
  [ToolKind.INTERACTIVE]: "interactive",
};

/** The name of `risk`; undefined for RISK_CLASS_UNSPECIFIED or a value this build does not know. */
export function riskClassName(risk: RiskClass): RiskName | undefined {
  return RISKS[risk];
}

/** The name of `kind`; undefined for TOOL_KIND_UNSPECIFIED or a value this build does not know. */
export function toolKindName(kind: ToolKind): ToolKindName | undefined {
  return KINDS[kind];
}
