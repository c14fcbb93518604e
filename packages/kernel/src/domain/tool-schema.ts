// ToolSchema validation at GetSchema time. A response that breaks any rule is rejected
// whole (ToolSchemaError lists every violation with provider, operation and rule); rules
// the kernel can repair conservatively produce warnings instead.
import { clone, type JsonObject } from "@bufbuild/protobuf";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { Dispatch, type SlashCommandSpec } from "@pluggableharness/protocol/slashcommand";
import {
  type GetSchemaResponse,
  RiskClass,
  ToolKind,
  type ToolSchema,
  ToolSchemaSchema,
} from "@pluggableharness/protocol/tool";
import { type RuleViolation, ToolSchemaError } from "./errors.ts";
import { toJsonSchema, translateSchema } from "./json-schema.ts";

/** Stable ids of the GetSchema rules, used in messages, warnings and tests. */
export const ToolSchemaRule = {
  nameRequired: "name-required",
  nameUnique: "name-unique",
  descriptionRequired: "description-required",
  kindSpecified: "kind-specified",
  riskSpecified: "risk-specified",
  resourceRiskNotReadOnly: "resource-risk-not-read-only",
  readOnlyRiskForNonResource: "read-only-risk-for-data-source-and-interactive",
  terminatesTurnResourceOnly: "terminates-turn-resource-only",
  inputSchemaRequired: "input-schema-required",
  outputSchemaRequired: "output-schema-required",
  schemaIsObject: "schema-top-level-object",
  jsonSchemaSubset: "json-schema-subset",
  keyFieldsInInputSchema: "key-fields-in-input-schema",
  keyFieldsNeedSafe: "key-fields-need-safe",
  concurrencyOnInteractive: "concurrency-ignored-on-interactive",
  concurrencyMissing: "concurrency-missing-treated-as-unsafe",
  defaultTimeoutPositive: "default-timeout-positive",
  modelTextFieldIsString: "model-text-field-is-a-string-output-property",
  modelOmittedFieldsInOutput: "model-omitted-fields-are-other-output-properties",
  spawnResourceOnly: "spawns-resource-only",
  spawnProfileFieldIsString: "spawns-profile-field-is-a-required-string-input-property",
  spawnNotProviderLocked: "spawns-not-provider-locked",
  slashCommandToolExists: "slash-command-tool-exists",
  slashCommandDirectInvokeNeedsTool: "slash-command-direct-invoke-needs-tool",
} as const;

/**
 * How the scheduler serializes an operation's calls:
 * - provider_lock: no other call to the provider runs at the same time (safe: false or undeclared);
 * - keyed: calls with equal values of `keyFields` run one after another;
 * - per_call: every call is its own key (safe: true without key_fields);
 * - interactive: one interactive call at a time, whatever was declared.
 */
export type ConcurrencyMode =
  | { readonly kind: "provider_lock" }
  | { readonly kind: "per_call" }
  | { readonly kind: "keyed"; readonly keyFields: readonly string[] }
  | { readonly kind: "interactive" };

export interface ValidatedTool {
  readonly provider: string;
  /** The schema as the kernel uses it: input/output schemas translated to the subset. */
  readonly schema: ToolSchema;
  readonly concurrency: ConcurrencyMode;
  /** JSON Schema (subset keywords only) for ajv and for model declarations. */
  readonly inputJsonSchema: JsonObject;
  readonly outputJsonSchema: JsonObject;
}

export interface ValidatedToolset {
  readonly provider: string;
  /** Operations by name, in declaration order. */
  readonly tools: ReadonlyMap<string, ValidatedTool>;
  readonly slashCommands: readonly SlashCommandSpec[];
  /** Accepted-but-repaired declarations (dropped keywords, ignored ConcurrencySpec, ...). */
  readonly warnings: readonly RuleViolation[];
}

const RISK_NAMES: Record<number, string> = {
  [RiskClass.READ_ONLY]: "read_only",
  [RiskClass.LOW]: "low",
  [RiskClass.MODERATE]: "moderate",
  [RiskClass.HIGH]: "high",
  [RiskClass.CRITICAL]: "critical",
};
const KIND_NAMES: Record<number, string> = {
  [ToolKind.RESOURCE]: "resource",
  [ToolKind.DATA_SOURCE]: "data_source",
  [ToolKind.INTERACTIVE]: "interactive",
};

export function toolKindName(kind: ToolKind): string {
  return KIND_NAMES[kind] ?? "unspecified";
}

/** The concurrency mode the kernel enforces for a (raw or validated) ToolSchema. */
export function concurrencyModeOf(tool: ToolSchema): ConcurrencyMode {
  if (tool.kind === ToolKind.INTERACTIVE) return { kind: "interactive" };
  const spec = tool.concurrency;
  if (!spec?.safe) return { kind: "provider_lock" };
  if (spec.keyFields.length === 0) return { kind: "per_call" };
  return { kind: "keyed", keyFields: [...spec.keyFields] };
}

/**
 * Validates a GetSchema response. Throws ToolSchemaError naming every broken rule;
 * otherwise returns the translated operations and the warnings to log.
 */
export function validateToolSchemas(provider: string, response: GetSchemaResponse): ValidatedToolset {
  const errors: RuleViolation[] = [];
  const warnings: RuleViolation[] = [];
  const tools = new Map<string, ValidatedTool>();
  const names = new Set<string>();

  for (const [index, raw] of response.tools.entries()) {
    const op = raw.name || `#${index}`;
    const fail = (rule: string, what: string) =>
      errors.push({ provider, subject: op, rule, message: `${provider}.${op}: ${what}` });
    const warn = (rule: string, what: string) =>
      warnings.push({ provider, subject: op, rule, message: `${provider}.${op}: ${what}` });

    if (!raw.name) fail(ToolSchemaRule.nameRequired, "operation has no name");
    else if (names.has(raw.name))
      fail(ToolSchemaRule.nameUnique, `name "${raw.name}" is declared more than once`);
    names.add(raw.name);
    if (!raw.description.trim()) fail(ToolSchemaRule.descriptionRequired, "description is empty");

    if (raw.kind === ToolKind.UNSPECIFIED || !KIND_NAMES[raw.kind]) {
      fail(ToolSchemaRule.kindSpecified, "kind is unspecified");
    }
    if (raw.risk === RiskClass.UNSPECIFIED || !RISK_NAMES[raw.risk]) {
      fail(ToolSchemaRule.riskSpecified, "risk is unspecified");
    } else if (raw.kind === ToolKind.RESOURCE && raw.risk === RiskClass.READ_ONLY) {
      fail(
        ToolSchemaRule.resourceRiskNotReadOnly,
        "a resource must declare low, moderate, high or critical risk, not read_only",
      );
    } else if (
      (raw.kind === ToolKind.DATA_SOURCE || raw.kind === ToolKind.INTERACTIVE) &&
      raw.risk !== RiskClass.READ_ONLY
    ) {
      fail(
        ToolSchemaRule.readOnlyRiskForNonResource,
        `a ${toolKindName(raw.kind)} must declare read_only risk, not ${RISK_NAMES[raw.risk]}`,
      );
    }
    if (raw.terminatesTurn && raw.kind !== ToolKind.RESOURCE) {
      fail(
        ToolSchemaRule.terminatesTurnResourceOnly,
        `terminates_turn is only allowed on a resource, not on a ${toolKindName(raw.kind)}`,
      );
    }

    const schema = clone(ToolSchemaSchema, raw);
    const inputProps = new Set<string>();
    if (raw.spawns) {
      // A spawn is gated (its risk depends on the child's profile) and names that profile
      // in one required string argument, which RunSession must then match.
      if (raw.kind !== ToolKind.RESOURCE)
        fail(
          ToolSchemaRule.spawnResourceOnly,
          `spawns is only allowed on a resource, not on a ${toolKindName(raw.kind)}`,
        );
      const field = raw.spawns.profileField;
      const prop = raw.inputSchema?.properties.find((p) => p.name === field);
      if (!field || prop?.schema?.type !== SchemaType.STRING || !raw.inputSchema?.required.includes(field))
        fail(
          ToolSchemaRule.spawnProfileFieldIsString,
          `spawns.profile_field "${field}" is not a required string property of input_schema`,
        );
      // A spawn holding a provider-wide lock would serialize sibling sub-agents and could
      // deadlock against a child calling the same provider.
      if (!raw.concurrency?.safe)
        fail(
          ToolSchemaRule.spawnNotProviderLocked,
          "a spawn-capable operation must declare concurrency safe: true (sub-agents run in parallel)",
        );
    }
    for (const which of ["input", "output"] as const) {
      const declared = which === "input" ? raw.inputSchema : raw.outputSchema;
      const rule =
        which === "input" ? ToolSchemaRule.inputSchemaRequired : ToolSchemaRule.outputSchemaRequired;
      if (!declared) {
        fail(rule, `${which}_schema is missing`);
        continue;
      }
      if (declared.type !== SchemaType.OBJECT) {
        fail(
          ToolSchemaRule.schemaIsObject,
          `${which}_schema must describe an object (arguments and payloads are JSON objects)`,
        );
      }
      const t = translateSchema(declared);
      for (const e of t.errors)
        fail(ToolSchemaRule.jsonSchemaSubset, `${which}_schema${e.path || ""}: ${e.message}`);
      for (const w of t.warnings)
        warn(ToolSchemaRule.jsonSchemaSubset, `${which}_schema${w.path || ""}: ${w.message}`);
      if (which === "input") {
        schema.inputSchema = t.schema;
        for (const p of declared.properties) inputProps.add(p.name);
      } else {
        schema.outputSchema = t.schema;
        // How the result reads to the model (tool-result-text.ts) names output properties.
        const props = new Map(declared.properties.map((p) => [p.name, p.schema]));
        if (raw.modelTextField !== "" && props.get(raw.modelTextField)?.type !== SchemaType.STRING)
          fail(
            ToolSchemaRule.modelTextFieldIsString,
            `model_text_field names "${raw.modelTextField}", which is not a string property of output_schema`,
          );
        for (const f of raw.modelOmittedFields) {
          if (!props.has(f) || f === raw.modelTextField)
            fail(
              ToolSchemaRule.modelOmittedFieldsInOutput,
              `model_omitted_fields names "${f}", which is not another property of output_schema`,
            );
        }
        if (raw.modelOmittedFields.length > 0 && raw.modelTextField === "")
          fail(
            ToolSchemaRule.modelOmittedFieldsInOutput,
            "model_omitted_fields needs a model_text_field that restates them",
          );
      }
    }

    const spec = raw.concurrency;
    if (raw.kind === ToolKind.INTERACTIVE) {
      if (spec) {
        warn(
          ToolSchemaRule.concurrencyOnInteractive,
          "ConcurrencySpec on an interactive operation is ignored; interactive calls run one at a time",
        );
        schema.concurrency = undefined;
      }
    } else if (!spec) {
      warn(
        ToolSchemaRule.concurrencyMissing,
        "no ConcurrencySpec declared; treated as safe: false (provider-wide lock)",
      );
    } else {
      for (const field of spec.keyFields) {
        if (!inputProps.has(field)) {
          fail(
            ToolSchemaRule.keyFieldsInInputSchema,
            `key_fields names "${field}", which is not a property of input_schema`,
          );
        }
      }
      if (!spec.safe && spec.keyFields.length > 0) {
        warn(
          ToolSchemaRule.keyFieldsNeedSafe,
          "key_fields is ignored because safe is false (provider-wide lock)",
        );
      }
    }

    const timeout = raw.defaultTimeout;
    if (
      timeout &&
      (timeout.seconds < 0n || timeout.nanos < 0 || (timeout.seconds === 0n && timeout.nanos === 0))
    ) {
      fail(ToolSchemaRule.defaultTimeoutPositive, "default_timeout must be a positive duration");
    }

    if (raw.name && !tools.has(raw.name)) {
      tools.set(raw.name, {
        provider,
        schema,
        concurrency: concurrencyModeOf(schema),
        inputJsonSchema: schema.inputSchema ? toJsonSchema(schema.inputSchema) : {},
        outputJsonSchema: schema.outputSchema ? toJsonSchema(schema.outputSchema) : {},
      });
    }
  }

  for (const cmd of response.slashCommands) {
    const subject = `/${cmd.name}`;
    if (cmd.toolName !== undefined && !names.has(cmd.toolName)) {
      errors.push({
        provider,
        subject,
        rule: ToolSchemaRule.slashCommandToolExists,
        message: `${provider} slash command ${subject}: tool_name "${cmd.toolName}" is not one of this provider's operations`,
      });
    } else if (cmd.dispatch === Dispatch.DIRECT_INVOKE && cmd.toolName === undefined) {
      errors.push({
        provider,
        subject,
        rule: ToolSchemaRule.slashCommandDirectInvokeNeedsTool,
        message: `${provider} slash command ${subject}: direct-invoke dispatch needs a tool_name`,
      });
    }
  }

  if (errors.length > 0) throw new ToolSchemaError(provider, errors);
  return { provider, tools, slashCommands: [...response.slashCommands], warnings };
}
