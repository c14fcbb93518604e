// The loaded configuration. Plain data: no resolved secret ever lives here
// (provider bodies stay undecoded until a ConfigSchema is known), so the whole
// object can be logged or serialised safely.

import type { JsonObject } from "@bufbuild/protobuf";
import type { Block, Body, Range } from "@pluggableharness/hcl";
import type { RiskName } from "@pluggableharness/protocol/tool-names";
import type { ConfigDiagnostic } from "./diagnostics.ts";
import type { VersionConstraint } from "./version.ts";

export interface RequiredProvider {
  /** The local name that provider blocks, profiles, hooks and policies use. */
  localName: string;
  source: string;
  /** The constraint as written. */
  version: string;
  constraints: VersionConstraint[];
  range: Range;
  /**
   * How the plugin is run, when written: "process" (a go-plugin subprocess) or "worker" (a
   * worker thread of the kernel; first-party providers only). Absent: the provider's default.
   */
  isolation?: "process" | "worker";
  /** Where `isolation` is written. */
  isolationRange?: Range;
  /** `network = true`: the plugin's sandbox keeps the network (default: only first-party plugins do). */
  network?: boolean;
}

/** A `provider "<name>" { ... }` block, kept undecoded until its ConfigSchema is known. */
export interface ProviderBlock {
  name: string;
  body: Body;
  /** The whole block. */
  block: Block;
  range: Range;
  /** Position among all top-level blocks: implicit hook subscriptions order by it. */
  order: number;
}

export type PolicyAction = "allow" | "ask" | "deny";
export type MatchKind = "resource" | "data_source";

export type { RiskName };
export interface PolicyMatch {
  kind?: MatchKind;
  provider?: string;
  tool_name?: string;
  risk?: RiskName;
  /**
   * Command patterns (arg-match.ts): the call's `command` argument, split into the simple
   * commands it runs, matches when each of them matches one of these. This project's
   * extension of the spec's four fields.
   */
  command?: string[];
  /** Path globs tested against the call's `path` argument, relative to the working directory. */
  path?: string[];
}

export type PolicyOrigin = "operator" | "always" | "session" | "builtin";

export interface PolicyRule {
  name: string;
  match: PolicyMatch;
  action: PolicyAction;
  origin: PolicyOrigin;
  /** Declaration index within its origin; the tie-breaker of last resort. */
  order: number;
  /** For ALWAYS rules: the profile the verdict was given under. */
  profile?: string;
  range?: Range;
}

export interface ModelRef {
  provider: string;
  id: string;
  /** Generation parameters (GenerationParams) given for this candidate. */
  params: GenerationParamsConfig;
  /**
   * `provider_options = { ... }`: vendor knobs copied into every request routed to this
   * candidate (StreamCompletionRequest.provider_options). Plain values only; nothing
   * in the kernel reads a key.
   */
  provider_options?: JsonObject;
  range: Range;
  /** Where `provider = ...` is written. */
  providerRange: Range;
  /** Where each generation parameter is written (its attribute's expression). */
  paramRanges?: Partial<Record<keyof GenerationParamsConfig, Range>>;
}

export interface GenerationParamsConfig {
  thinking_effort?: string;
  thinking_budget_tokens?: number;
  max_output_tokens?: number;
  temperature?: number;
  /** Nucleus sampling, 0..1. */
  top_p?: number;
  /** Top-k sampling, a positive integer. */
  top_k?: number;
  stop_sequences?: string[];
  /**
   * GenerationParams.tool_choice: "auto", "any" (some tool call is required), "none", or a
   * "<provider>.<tool>" the model must call. Sent only on requests offering tools (and,
   * for one tool, offering that tool); checked against the model's
   * supported_tool_choice_modes at load.
   */
  tool_choice?: ToolChoiceConfig;
}

export type ToolChoiceConfig =
  | { mode: "auto" | "any" | "none" }
  | { mode: "specific"; provider: string; tool: string };

export interface ToolPattern {
  provider: string;
  /** A tool name, or "*" for every tool of the provider. */
  tool: string;
  text: string;
  range: Range;
}

export interface AgentProfile {
  name: string;
  /** Absent only for the built-in root profile: the kernel picks a model then. */
  model?: { primary: ModelRef; fallbacks: ModelRef[] };
  /** Omitted means no tools (strict default). */
  tools: ToolPattern[];
  /** Omitted means no prompt_expansion commands (strict default). */
  slash_commands: string[];
  max_depth?: number;
  max_concurrent_subagents?: number;
  max_turns?: number;
  max_cost_usd?: number;
  max_wall_clock_s?: number;
  /**
   * A sub-agent of this profile starts from a copy of its parent's conversation instead
   * of only its prompt (opt-in; the default is a fresh context).
   */
  fork_parent_history?: boolean;
  /** False for the kernel's built-in stand-in for a missing "default" profile. */
  declared: boolean;
  range?: Range;
}

export type HookPointName =
  | "session-start"
  | "pre-model-call"
  | "post-model-response"
  | "pre-tool-call"
  | "plan-ready"
  | "post-tool-call"
  | "post-apply"
  | "session-end";

export type HookModeName = "observe" | "transform" | "veto";

export interface HookSubscription {
  point: HookPointName;
  provider: string;
  mode: HookModeName;
  /** Per-subscriber override of settings.default_hook_timeout_ms. */
  timeout_ms?: number;
  range: Range;
  providerRange: Range;
  /** Position among all top-level blocks (declaration order across hook and provider blocks). */
  order: number;
}

export interface RetrySettings {
  base_delay_ms: number;
  backoff_factor: number;
  max_retries: number;
}

export interface ObservabilitySettings {
  endpoint: string;
  protocol: "grpc" | "http";
  sampling_ratio: number;
  traces_enabled: boolean;
  metrics_enabled: boolean;
  logs_enabled: boolean;
  export_interval_ms: number;
  service_name: string;
  resource_attrs: Record<string, string>;
}

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

export interface Settings {
  default_frontend?: string;
  /**
   * The bubblewrap sandbox for tool plugins and third-party plugins (docs/decisions/sandbox-and-policy.md): "required" fails a launch where it cannot run, "best_effort" runs them
   * unconfined there and warns once, "off" never sandboxes.
   */
  sandbox: "required" | "best_effort" | "off";
  /**
   * Let tools and commands write the repository's git metadata (.git/config, .git/hooks,
   * commondir, ...: docs/security/git.md). Off by default: those files make git run
   * programs later, outside any sandbox.
   */
  allow_git_metadata_writes: boolean;
  log_level: LogLevel;
  /** Effective switch: `telemetry` when written, else whether observability{} is present. */
  telemetry: boolean;
  /** Whether `observability{}` was written (its presence implies intent). */
  observability_declared: boolean;
  default_hook_timeout_ms: number;
  default_tool_timeout_ms: number;
  /**
   * How long a model call may deliver nothing (no first event, or no next one) before the
   * kernel cuts it as a retryable stall.
   */
  stream_idle_timeout_ms: number;
  /**
   * The longest the kernel waits before a retry, whatever the backoff or a vendor's
   * retry-after asks for; a longer retry-after is cut to this and reported.
   */
  max_retry_delay_ms: number;
  /**
   * How long one model call may wait in all for an answer to begin: every attempt's silence
   * before its first event and every retry wait, summed. Then the turn fails, naming it.
   */
  max_model_wait_ms: number;
  /** remaining_depth of a root session whose profile sets no max_depth. */
  default_max_depth: number;
  doom_loop_threshold: number;
  doom_loop_window: number;
  /**
   * A generation parameter a profile sets for a model that refuses it (a sampling
   * parameter, e.g. temperature on Claude Opus 4.7+) is an error instead of a warning.
   */
  strict_params: boolean;
  retry: RetrySettings;
  observability: ObservabilitySettings;
  compaction: CompactionSettings;
  /** `settings { fleet { ... } }`: where `agent batch` and `agent worker` find their engines. */
  fleet?: FleetSettings;
}

/**
 * Fleet mode's engines (docs/decisions/fleet.md). Their URLs carry credentials, so each is
 * written `env("NAME")` and only the variable's name lives in the configuration; the
 * commands that need them resolve it (resolveFleetUrls), never `agent run`.
 */
export interface FleetSettings {
  redis_url: EnvReference;
  postgres_url: EnvReference;
  range: Range;
}

/** An `env("NAME")` attribute kept unresolved: the variable and where it is written. */
export interface EnvReference {
  name: string;
  range: Range;
}

/** Where compaction starts: a share of the model's effective ceiling, or a token count. */
export type CompactAt =
  | { readonly kind: "percent"; readonly value: number }
  | { readonly kind: "tokens"; readonly value: number };

/** `settings { compaction { ... } }`: when the kernel asks the compactor to shrink the history. */
export interface CompactionSettings {
  /**
   * Compaction at the threshold. Off, the kernel still compacts when the model refuses a
   * request as too long or no window holds the history (never a dead end), and /compact works.
   */
  enabled: boolean;
  /** Compact before a request whose estimated size reaches this (default 80%). */
  threshold: CompactAt;
  /** Treat every model's context window as at most this many tokens (0: the model's own). */
  context_window: number;
}

export interface AgentConfig {
  /** "file": read from agent.hcl; "builtin": defaultConfig(). */
  origin: "file" | "builtin";
  /** The file that was read (or a synthetic name for the built-in default). */
  file: string;
  projectDir: string;
  requiredProviders: RequiredProvider[];
  providers: ProviderBlock[];
  policies: PolicyRule[];
  profiles: AgentProfile[];
  hooks: HookSubscription[];
  settings: Settings;
  /** Warnings found while loading (errors make loading fail). */
  warnings: ConfigDiagnostic[];
}
