// The built-in configuration used when a project has no agent.hcl. It is written
// as HCL text and loaded through the ordinary loader, so it obeys every rule a
// hand-written file does (secrets included). Its model provider depends on which
// vendor credential the environment holds, checked in this order:
//   ANTHROPIC_API_KEY                       -> anthropic (at ANTHROPIC_BASE_URL when set)
//   OPENAI_API_KEY, no OPENAI_MODEL           -> openai (at OPENAI_BASE_URL when set: a proxy
//                                                of OpenAI's API, as the OpenAI SDKs read it)
//   GEMINI_API_KEY, then GOOGLE_API_KEY       -> google
//   XAI_API_KEY                             -> xai
//   OPENAI_BASE_URL + OPENAI_MODEL           -> openai-compatible (OPENAI_API_KEY optional)
// OPENAI_MODEL with OPENAI_API_KEY and no base URL picks the openai model. Empty variables
// count as unset.

import { writeValue } from "@pluggableharness/hcl";
import {
  type Capabilities,
  detectCapabilities,
  explorerTools,
  SUBAGENT_PROFILES,
} from "./default-capabilities.ts";
import { type ConfigDiagnostic, fileDiag } from "./diagnostics.ts";
import type { Environment } from "./secrets.ts";
import { type FirstPartyName, firstPartySource } from "./source-address.ts";

export const BUILTIN_CONFIG_FILE = "<built-in default configuration>";

/** First-party tool providers every zero-config session gets. */
export const DEFAULT_TOOL_PROVIDERS: readonly FirstPartyName[] = [
  "filesystem",
  "search",
  "exec",
  "web",
  "user",
  "task",
  "commands",
];

interface VendorChoice {
  provider: FirstPartyName;
  /** Attribute name -> environment variable, all sensitive. */
  secrets: Record<string, string>;
  /** Attribute name -> environment variable, not sensitive. */
  plain?: Record<string, string>;
  primary: string;
  fallbacks: string[];
}

const set = (env: Environment, name: string) => {
  const v = Object.hasOwn(env, name) ? env[name] : undefined;
  return v !== undefined && v !== "";
};

/** The vendor the built-in configuration would use, or undefined when none is configured. */
export function chooseVendor(env: Environment): VendorChoice | undefined {
  if (set(env, "ANTHROPIC_API_KEY")) {
    return {
      provider: "anthropic",
      secrets: { api_key: "ANTHROPIC_API_KEY" },
      ...(set(env, "ANTHROPIC_BASE_URL") ? { plain: { base_url: "ANTHROPIC_BASE_URL" } } : {}),
      primary: "claude-sonnet-5",
      fallbacks: ["claude-haiku-4-5-20251001"],
    };
  }
  if (set(env, "OPENAI_API_KEY") && !(set(env, "OPENAI_BASE_URL") && set(env, "OPENAI_MODEL"))) {
    return {
      provider: "openai",
      secrets: { api_key: "OPENAI_API_KEY" },
      ...(set(env, "OPENAI_BASE_URL") ? { plain: { base_url: "OPENAI_BASE_URL" } } : {}),
      primary: set(env, "OPENAI_MODEL") ? env.OPENAI_MODEL! : "gpt-5.6-sol",
      fallbacks: [],
    };
  }
  for (const name of ["GEMINI_API_KEY", "GOOGLE_API_KEY"]) {
    if (set(env, name)) {
      return {
        provider: "google",
        secrets: { api_key: name },
        // Both GA with no shutdown announced (a preview id can be retired at short notice:
        // gemini-3-pro-preview was, and the zero-config default then answered 404).
        primary: "gemini-3.8-flash",
        fallbacks: ["gemini-3.5-flash-lite"],
      };
    }
  }
  if (set(env, "XAI_API_KEY")) {
    return { provider: "xai", secrets: { api_key: "XAI_API_KEY" }, primary: "grok-4.3", fallbacks: [] };
  }
  if (set(env, "OPENAI_BASE_URL") && set(env, "OPENAI_MODEL")) {
    return {
      provider: "openai-compatible",
      secrets: set(env, "OPENAI_API_KEY") ? { api_key: "OPENAI_API_KEY" } : {},
      plain: { base_url: "OPENAI_BASE_URL", model: "OPENAI_MODEL" },
      primary: env.OPENAI_MODEL!,
      fallbacks: [],
    };
  }
  return undefined;
}

const NONE_SET =
  "Without an agent.hcl the agent needs a model vendor credential. Set one of ANTHROPIC_API_KEY, OPENAI_API_KEY, " +
  "GEMINI_API_KEY (or GOOGLE_API_KEY), XAI_API_KEY, or OPENAI_BASE_URL together with OPENAI_MODEL for an " +
  "OpenAI-compatible server (OPENAI_API_KEY optional) - or write an agent.hcl.";

/** A half-configured OpenAI-compatible server: what is missing, said plainly. */
function halfSet(env: Environment): string | undefined {
  if (set(env, "OPENAI_BASE_URL") && !set(env, "OPENAI_MODEL") && !set(env, "OPENAI_API_KEY")) {
    return (
      "OPENAI_BASE_URL is set but OPENAI_MODEL is not: set OPENAI_MODEL to a model that server " +
      "serves (e.g. OPENAI_MODEL=llama3.2 for Ollama), or OPENAI_API_KEY when it is a proxy of " +
      `OpenAI's own API. ${NONE_SET}`
    );
  }
  return undefined;
}

/** First-party tools whose configuration requires the directories they may touch. */
const ROOTED_TOOL_PROVIDERS: readonly FirstPartyName[] = ["filesystem", "search"];

/**
 * Every first-party provider a generated agent.hcl requires, in load order: the model
 * vendors, the tool providers, then the context providers, widgets, compactor and TUI.
 * Memory is a context provider whose contribution changes between turns: it comes after
 * the static context ones, so it does not invalidate their prompt-cache prefix.
 */
export function requiredProviderNames(
  vendors: readonly FirstPartyName[],
  tools: readonly FirstPartyName[],
): FirstPartyName[] {
  return [
    ...vendors,
    ...tools.filter((t) => t !== "memory"),
    "agent",
    "project-context",
    "workspace-context",
    "memory",
    "widgets",
    "compactor",
    "tui",
  ];
}

/**
 * The built-in agent.hcl text for `env`, or undefined when no vendor is configured.
 * With `projectDir`, the file and search tools are confined to that directory, and the
 * git and LSP tools are offered when the project has a repository / a language server.
 */
export function defaultConfigSource(env: Environment, projectDir?: string): string | undefined {
  const vendor = chooseVendor(env);
  if (vendor === undefined) return undefined;
  const caps: Capabilities =
    projectDir === undefined ? { git: false, lsp: undefined } : detectCapabilities(projectDir, env);
  const tools: FirstPartyName[] = [
    ...DEFAULT_TOOL_PROVIDERS,
    "memory",
    ...(caps.git ? (["git"] as const) : []),
    ...(caps.lsp ? (["lsp"] as const) : []),
  ];
  const all = requiredProviderNames([vendor.provider], tools);
  const q = (s: string) => writeValue(s);
  const list = (items: readonly string[]) => `[${items.map(q).join(", ")}]`;
  const lines: string[] = ["required_providers {"];
  for (const name of all) {
    lines.push(
      `  ${name} = {`,
      `    source  = ${q(firstPartySource(name))}`,
      `    version = ">= 0.0.0"`,
      "  }",
    );
  }
  lines.push("}", "", `provider ${q(vendor.provider)} {`);
  for (const [attr, variable] of Object.entries({ ...vendor.secrets, ...vendor.plain })) {
    lines.push(`  ${attr} = env(${q(variable)})`);
  }
  lines.push("}", "");
  if (projectDir !== undefined) {
    const rooted = [...ROOTED_TOOL_PROVIDERS, ...(caps.git ? ["git"] : []), ...(caps.lsp ? ["lsp"] : [])];
    for (const name of rooted) {
      lines.push(`provider ${q(name)} {`, `  roots = [${q(projectDir)}]`);
      if (name === "lsp" && caps.lsp) lines.push(...lspMaps(caps.lsp.servers, caps.lsp.extensions, q));
      lines.push("}", "");
    }
  }
  lines.push(`provider "agent" {`, "  profiles = {");
  for (const [name, what] of Object.entries(SUBAGENT_PROFILES)) lines.push(`    ${name} = ${q(what)}`);
  lines.push("  }", "}", "");
  // A spawn the kernel rates moderate (a child that only reads, or whose every change asks)
  // runs without asking, as Claude Code's sub-agents do; one it raises to critical asks.
  lines.push(
    `policy "allow_subagents" {`,
    `  match  = { provider = "agent", risk = "moderate" }`,
    `  action = "allow"`,
    "}",
    "",
  );
  const model = () => {
    lines.push("  model {", "    primary {");
    lines.push(`      provider = ${q(vendor.provider)}`, `      id       = ${q(vendor.primary)}`, "    }");
    for (const id of vendor.fallbacks) {
      lines.push(
        "    fallback {",
        `      provider = ${q(vendor.provider)}`,
        `      id       = ${q(id)}`,
        "    }",
      );
    }
    lines.push("  }");
  };
  const toolPatterns = tools.map((p) => `${p}.*`);
  lines.push(`agent_profile "default" {`);
  model();
  lines.push(`  tools = ${list([...toolPatterns, "agent.*"])}`);
  // Every prompt-expansion command the providers declare (user commands in .agent/commands).
  lines.push(`  slash_commands = ["*"]`);
  lines.push("  max_turns = 100", "}", "");
  lines.push(`agent_profile "explorer" {`);
  model();
  lines.push(`  tools = ${list(explorerTools(caps))}`, "  max_turns = 50", "}", "");
  lines.push(`agent_profile "worker" {`);
  model();
  lines.push(`  tools = ${list(toolPatterns)}`, "  max_turns = 100", "}", "");
  lines.push("settings {", `  default_frontend = "tui"`, "}", "");
  return lines.join("\n");
}

/** The lsp provider's `servers` and `extensions` maps, as HCL lines. */
export function lspMaps(
  servers: Record<string, string>,
  extensions: Record<string, string>,
  q: (s: string) => string,
): string[] {
  const map = (m: Record<string, string>) =>
    `{ ${Object.entries(m)
      .map(([k, v]) => `${q(k)} = ${q(v)}`)
      .join(", ")} }`;
  const out: string[] = [];
  if (Object.keys(servers).length > 0) out.push(`  servers    = ${map(servers)}`);
  if (Object.keys(extensions).length > 0) out.push(`  extensions = ${map(extensions)}`);
  return out;
}

/** The error of a project with no agent.hcl and no usable vendor key: which variables to set. */
export function noVendorDiagnostic(env: Environment): ConfigDiagnostic {
  return fileDiag(
    "error",
    "no_model_provider",
    BUILTIN_CONFIG_FILE,
    "No model provider configured",
    halfSet(env) ?? NONE_SET,
  );
}
