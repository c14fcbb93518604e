// `agent init`: writes a commented agent.hcl for the vendor credentials found in the
// environment (or, without any, every vendor commented out to pick from; an existing one
// is kept), installs every required provider and writes the lock file, then says what to
// do next. Keys are never written: provider blocks read them with env("NAME") when a
// session starts.
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  type Capabilities,
  CONFIG_FILE,
  chooseVendor,
  DEFAULT_TOOL_PROVIDERS,
  detectCapabilities,
  explorerTools,
  type FirstPartyName,
  firstPartySource,
  formatDiagnostics,
  loadProjectConfig,
  lspMaps,
  requiredProviderNames,
  SUBAGENT_PROFILES,
} from "@pluggableharness/config";
import { writeValue } from "@pluggableharness/hcl";
import { EXIT } from "../exit-codes.ts";
import { type Io, line } from "../io.ts";
import { foundAbove, projectOf } from "../project.ts";
import { lockProject } from "./lock.ts";

type Vendor = NonNullable<ReturnType<typeof chooseVendor>>;

/** Every vendor the environment configures, in the built-in order of preference. */
export function vendorsFound(env: NodeJS.ProcessEnv): { vendor: Vendor; variables: string[] }[] {
  const has = (n: string) => (env[n] ?? "") !== "";
  // A base URL set beside a key (a proxy, a gateway) is written too, as zero-config uses it.
  const also = (n: string) => (has(n) ? [n] : []);
  const candidates: string[][] = [
    ["ANTHROPIC_API_KEY", ...also("ANTHROPIC_BASE_URL")],
    has("OPENAI_BASE_URL") && has("OPENAI_MODEL") ? [] : ["OPENAI_API_KEY", ...also("OPENAI_BASE_URL")],
    ["GEMINI_API_KEY"],
    has("GEMINI_API_KEY") ? [] : ["GOOGLE_API_KEY"],
    ["XAI_API_KEY"],
    ["OPENAI_BASE_URL", "OPENAI_MODEL", ...(has("OPENAI_API_KEY") ? ["OPENAI_API_KEY"] : [])],
  ];
  const found: { vendor: Vendor; variables: string[] }[] = [];
  for (const names of candidates) {
    if (names.length === 0 || !names.every(has)) continue;
    const vendor = chooseVendor(Object.fromEntries(names.map((n) => [n, env[n]])));
    if (vendor && !found.some((f) => f.vendor.provider === vendor.provider))
      found.push({ vendor, variables: names });
  }
  return found;
}

const q = (s: string) => writeValue(s);

/** Every vendor `agent init` knows, with the variables that would select it. */
const VENDOR_EXAMPLES: ReadonlyArray<Record<string, string>> = [
  { ANTHROPIC_API_KEY: "x" },
  { OPENAI_API_KEY: "x" },
  { GEMINI_API_KEY: "x" },
  { XAI_API_KEY: "x" },
  { OPENAI_BASE_URL: "http://localhost:11434/v1", OPENAI_MODEL: "qwen3" },
];

function requiredEntry(name: FirstPartyName, indent = "  "): string[] {
  return [
    `${indent}${name} = {`,
    `${indent}  source  = ${q(firstPartySource(name))}`,
    `${indent}  version = ">= 0.1.0"`,
    `${indent}}`,
  ];
}

function providerBlock(v: Vendor): string[] {
  return [
    `provider ${q(v.provider)} {`,
    ...Object.entries({ ...v.secrets, ...v.plain }).map(
      ([attr, variable]) => `  ${attr} = env(${q(variable)})`,
    ),
    "}",
  ];
}

const commented = (lines: readonly string[]) => lines.map((l) => (l === "" ? "#" : `# ${l}`));

/** The tool providers the default and worker profiles get (git always: a project is usually a repository). */
function profileToolProviders(caps: Capabilities): FirstPartyName[] {
  return [...DEFAULT_TOOL_PROVIDERS, "memory", "git", ...(caps.lsp ? (["lsp"] as const) : [])];
}

/**
 * The agent.hcl text for the vendors found; the first one is the primary model. With no
 * vendor at all, every vendor is written out commented, for the user to pick one.
 * Roots are ".": the directory of agent.hcl, wherever the project is moved. `caps` says
 * which language servers the project has (git is written in every case).
 */
export function initConfigText(
  found: { vendor: Vendor; variables: string[] }[],
  caps: Capabilities = { git: true, lsp: undefined },
): string {
  const vendors = found.map((f) => f.vendor);
  const primary = vendors[0];
  const examples = primary ? [] : VENDOR_EXAMPLES.map((env) => chooseVendor(env)!);
  const toolProviders = profileToolProviders(caps);
  const names = requiredProviderNames(
    vendors.map((v) => v.provider),
    toolProviders,
  );
  const out: string[] = [
    "# agent.hcl: how PluggableHarness runs in this project. Written by `agent init`.",
    "# Check it with `agent validate`, then start a session with `agent run`.",
    "#",
  ];
  if (primary) {
    out.push(
      `# Vendor credentials found: ${found.flatMap((f) => f.variables.filter((v) => !/_MODEL$|_BASE_URL$/.test(v))).join(", ")}.`,
      "# No key is stored here: each provider block reads its key from the environment",
      '# with env("NAME") when a session starts.',
    );
  } else {
    out.push(
      "# No model vendor credential was found in the environment, so no model is set up",
      "# yet: pick a vendor below and uncomment its parts (its required_providers entry,",
      "# its provider block and the model in each profile), then set its key, e.g.",
      "# `export ANTHROPIC_API_KEY=...`. Keys are never stored here: provider blocks read",
      '# them from the environment with env("NAME") when a session starts.',
    );
  }
  out.push("", "# Every plugin this project uses, with where it comes from and which versions fit.");
  out.push("required_providers {");
  for (const v of examples) out.push(...commented(requiredEntry(v.provider, "")).map((l) => `  ${l}`));
  for (const name of names) out.push(...requiredEntry(name));
  out.push("}", "");
  for (const v of vendors) out.push(...providerBlock(v), "");
  for (const v of examples) out.push(...commented(providerBlock(v)), "");
  out.push(
    "# The tools may only touch files under these directories (relative paths are taken",
    "# from the directory of this file).",
    `provider "filesystem" {`,
    `  roots = ["."]`,
    "}",
    "",
    `provider "search" {`,
    `  roots = ["."]`,
    "}",
    "",
    `provider "exec" {`,
    `  roots = ["."]`,
    "}",
    "",
    "# git_status, git_diff, git_log, ... run freely; git_commit, git_push, ... ask first.",
    `provider "git" {`,
    `  roots = ["."]`,
    "}",
    "",
  );
  if (caps.lsp) {
    out.push(
      `# Diagnostics and code navigation from language servers (found: ${caps.lsp.languages.join(", ")}),`,
      "# each started on first use.",
      `provider "lsp" {`,
      `  roots = ["."]`,
      ...lspMaps(caps.lsp.servers, caps.lsp.extensions, q),
      "}",
      "",
    );
  } else {
    out.push(
      "# No language server was found for this project. For diagnostics, add `lsp` to",
      "# required_providers and the profiles' tools, and e.g.:",
      `# provider "lsp" {`,
      `#   servers    = { python = "pyright-langserver --stdio" }`,
      `#   extensions = { ".py" = "python" }`,
      "# }",
      "",
    );
  }
  out.push(
    "# What the agent remembers across sessions (memory.remember / memory.forget ask first,",
    "# like any change): markdown files in .agent/memory/ for this project and in",
    "# $XDG_DATA_HOME/agent/memory/ for every project; edit them by hand freely.",
    '# store = "sqlite" keeps them in SQLite with full-text search instead.',
    `provider "memory" {`,
    `  store = "markdown"`,
    "}",
    "",
    "# Sub-agents: the model may hand a task to one of these profiles (defined below),",
    "# which runs as a child session with its own context and reports back.",
    `provider "agent" {`,
    "  profiles = {",
    ...Object.entries(SUBAGENT_PROFILES).map(([name, what]) => `    ${name} = ${q(what)}`),
    "  }",
    "}",
    "",
    "# Policy: reads and searches run without asking, anything that changes something",
    "# asks first (answer once, for the session, or always), whatever its risk; nothing is",
    "# refused silently. The most specific matching rule wins. To refuse something, add",
    '# a rule with action = "deny", e.g. match = { risk = "critical" }; a refused call',
    "# names the rule that refused it.",
    `policy "allow_reads" {`,
    `  match  = { kind = "data_source" }`,
    `  action = "allow"`,
    "}",
    "",
    `policy "ask_before_changes" {`,
    `  match  = { kind = "resource" }`,
    `  action = "ask"`,
    "}",
    "",
    "# Starting a sub-agent that only reads, or whose every change asks, runs without",
    "# asking; one that could change files unattended is rated critical and asks.",
    `policy "allow_subagents" {`,
    `  match  = { provider = "agent", risk = "moderate" }`,
    `  action = "allow"`,
    "}",
    "",
    "# The profile `agent run` uses unless you pass --profile.",
    `agent_profile "default" {`,
  );
  const model: string[] = [];
  if (primary) {
    model.push(
      "  model {",
      "    primary {",
      `      provider = ${q(primary.provider)}`,
      `      id       = ${q(primary.primary)}`,
      "    }",
    );
    // Fallbacks: the primary vendor's own, then every other vendor found.
    const fallbacks: [string, string][] = [
      ...primary.fallbacks.map((id): [string, string] => [primary.provider, id]),
      ...vendors.slice(1).map((v): [string, string] => [v.provider, v.primary]),
    ];
    for (const [provider, id] of fallbacks) {
      model.push("    fallback {", `      provider = ${q(provider)}`, `      id       = ${q(id)}`, "    }");
    }
    model.push("  }");
  } else {
    model.push("  # The model: uncomment one primary, the vendor you set up above.");
    model.push("  # model {");
    for (const v of examples) {
      model.push(
        "  #   primary {",
        `  #     provider = ${q(v.provider)}`,
        `  #     id       = ${q(v.primary)}`,
        "  #   }",
      );
    }
    model.push("  # }");
  }
  out.push(...model);
  const childModel = primary
    ? model
    : ["  # model: uncomment the same one as in the default profile (copy its model block here)."];
  const list = (items: readonly string[]) => `[${items.map(q).join(", ")}]`;
  const toolPatterns = toolProviders.map((p) => `${p}.*`);
  out.push(
    "",
    `  tools = ${list([...toolPatterns, "agent.*"])}`,
    "",
    "  # Bounds: the session stops (after one last answer) when one is reached.",
    "  max_turns = 100",
    "  # max_cost_usd     = 5.00",
    "  # max_wall_clock_s = 3600",
    "}",
    "",
    "# The sub-agents' profiles: the explorer only reads; the worker has the default",
    "# profile's tools but cannot start sub-agents of its own, and its changes ask too.",
    `agent_profile "explorer" {`,
    ...childModel,
    `  tools     = ${list(explorerTools({ ...caps, git: true }))}`,
    "  max_turns = 50",
    "}",
    "",
    `agent_profile "worker" {`,
    ...childModel,
    `  tools     = ${list(toolPatterns)}`,
    "  max_turns = 100",
    "}",
    "",
    "settings {",
    `  default_frontend = "tui"`,
    "",
    "  # When the conversation nears the model's context window, the compactor provider",
    "  # summarises the older part (also /compact, or `agent run --compact-at 60%`).",
    "  # compaction {",
    `  #   threshold      = "80%"  # of the usable window, or a token count: 120000`,
    "  #   context_window = 0      # treat every model's window as at most this many tokens",
    "  # }",
    "}",
    "",
  );
  return out.join("\n");
}

export async function runInit(io: Io, options: { dir?: string; force?: boolean }): Promise<number> {
  // Without -C, a project found above (agent run here would use it) is not shadowed by a
  // second agent.hcl: it is the one kept (and locked). -C names the directory to write in.
  const above = options.dir === undefined ? projectOf(io) : undefined;
  const inherited = above !== undefined && foundAbove(above);
  const dir = inherited ? above.dir : resolve(io.cwd, options.dir ?? ".");
  const path = join(dir, CONFIG_FILE);
  const keep = inherited || (existsSync(path) && !options.force);
  if (inherited) {
    line(io.out, `${path} is the configuration of the project this directory is in; kept it.`);
    line(io.out, "  (`agent init -C .` writes a separate agent.hcl here.)");
  } else if (keep) {
    line(io.out, `${path} exists; kept it (--force writes a new one).`);
  } else {
    const found = vendorsFound(io.env);
    const caps = detectCapabilities(dir, io.env);
    writeFileSync(path, initConfigText(found, caps), { mode: 0o644 });
    line(io.out, `Wrote ${path}`);
    const [first, ...rest] = found.map((f) => f.vendor);
    if (first) {
      line(
        io.out,
        `  model: ${first.provider}/${first.primary}${rest.length > 0 ? ` (fallbacks: ${rest.map((v) => `${v.provider}/${v.primary}`).join(", ")})` : ""}`,
      );
    } else {
      line(io.out, "  model: none yet. No vendor key was found (ANTHROPIC_API_KEY, OPENAI_API_KEY,");
      line(io.out, "  GEMINI_API_KEY or GOOGLE_API_KEY, XAI_API_KEY, or OPENAI_BASE_URL with OPENAI_MODEL):");
      line(io.out, "  uncomment one vendor in the file and set its key.");
    }
    line(io.out, `  tools: ${profileToolProviders(caps).join(", ")}; reads run freely, changes ask first`);
    line(io.out, `  sub-agents: ${Object.keys(SUBAGENT_PROFILES).join(", ")}`);
  }
  // Like `terraform init`: every required provider resolved, installed and locked.
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) {
    line(io.err, formatDiagnostics(loaded.diagnostics));
    line(
      io.err,
      "Fix agent.hcl, then run `agent providers lock` to install its providers and write the lock file.",
    );
    return EXIT.ERROR;
  }
  const locked = await lockProject(io, dir, loaded.config, "lock");
  if (locked !== EXIT.OK) return locked;
  line(io.out);
  line(io.out, "Next: read it over, check it with `agent validate`, then start a session with `agent run`");
  line(
    io.out,
    '(or headless: `agent run -p "describe this repository"`). Commit agent.hcl and .agent/agent.lock.hcl.',
  );
  return EXIT.OK;
}
