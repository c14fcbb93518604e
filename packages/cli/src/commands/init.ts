// `agent init`: writes a commented agent.hcl for the vendor credentials found in the
// environment (keeping one that exists), installs every required provider and writes
// the lock file, then says what to do next. Keys are never written: provider blocks
// read them with env("NAME") when a session starts.
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  CONFIG_FILE,
  chooseVendor,
  DEFAULT_TOOL_PROVIDERS,
  type FirstPartyName,
  firstPartySource,
  formatDiagnostics,
  loadProjectConfig,
} from "@pluggableharness/config";
import { writeValue } from "@pluggableharness/hcl";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { lockProject } from "./lock.ts";

type Vendor = NonNullable<ReturnType<typeof chooseVendor>>;

/** Every vendor the environment configures, in the built-in order of preference. */
export function vendorsFound(env: NodeJS.ProcessEnv): { vendor: Vendor; variables: string[] }[] {
  const has = (n: string) => (env[n] ?? "") !== "";
  const candidates: string[][] = [
    ["ANTHROPIC_API_KEY"],
    has("OPENAI_BASE_URL") ? [] : ["OPENAI_API_KEY"],
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

/** The agent.hcl text for the vendors found; the first one is the primary model. */
export function initConfigText(found: { vendor: Vendor; variables: string[] }[], projectDir: string): string {
  const vendors = found.map((f) => f.vendor);
  const primary = vendors[0]!;
  const names: FirstPartyName[] = [
    ...vendors.map((v) => v.provider),
    ...DEFAULT_TOOL_PROVIDERS,
    "project-context",
    "tui",
  ];
  const out: string[] = [
    "# agent.hcl: how PluggableHarness runs in this project. Written by `agent init`.",
    "# Check it with `agent validate`, then start a session with `agent run`.",
    "#",
    `# Vendor credentials found: ${found.flatMap((f) => f.variables.filter((v) => v !== "OPENAI_MODEL")).join(", ")}.`,
    "# No key is stored here: each provider block reads its key from the environment",
    '# with env("NAME") when a session starts.',
    "",
    "# Every plugin this project uses, with where it comes from and which versions fit.",
    "required_providers {",
  ];
  for (const name of names) {
    out.push(
      `  ${name} = {`,
      `    source  = ${q(firstPartySource(name))}`,
      `    version = ">= 0.1.0"`,
      "  }",
    );
  }
  out.push("}", "");
  for (const v of vendors) {
    out.push(`provider ${q(v.provider)} {`);
    for (const [attr, variable] of Object.entries({ ...v.secrets, ...v.plain })) {
      out.push(`  ${attr} = env(${q(variable)})`);
    }
    out.push("}", "");
  }
  out.push(
    "# The tools may only touch files under these directories.",
    `provider "filesystem" {`,
    `  roots = [${q(projectDir)}]`,
    "}",
    "",
    `provider "search" {`,
    `  roots = [${q(projectDir)}]`,
    "}",
    "",
    `provider "exec" {`,
    `  roots = [${q(projectDir)}]`,
    "}",
    "",
    "# Policy: reads and searches run without asking, anything that changes something",
    "# asks first (answer once, for the session, or always), and critical-risk calls",
    "# are refused. The most specific matching rule wins.",
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
    `policy "refuse_critical" {`,
    `  match  = { risk = "critical" }`,
    `  action = "deny"`,
    "}",
    "",
    "# The profile `agent run` uses unless you pass --profile.",
    `agent_profile "default" {`,
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
    out.push("    fallback {", `      provider = ${q(provider)}`, `      id       = ${q(id)}`, "    }");
  }
  out.push(
    "  }",
    "",
    `  tools = [${DEFAULT_TOOL_PROVIDERS.map((p) => q(`${p}.*`)).join(", ")}]`,
    "",
    "  # Bounds: the session stops (after one last answer) when one is reached.",
    "  max_turns = 100",
    "  # max_cost_usd     = 5.00",
    "  # max_wall_clock_s = 3600",
    "}",
    "",
    "settings {",
    `  default_frontend = "tui"`,
    "}",
    "",
  );
  return out.join("\n");
}

export async function runInit(io: Io, options: { dir?: string; force?: boolean }): Promise<number> {
  const dir = resolve(io.cwd, options.dir ?? ".");
  const path = join(dir, CONFIG_FILE);
  const keep = existsSync(path) && !options.force;
  if (keep) {
    line(io.out, `${path} exists; kept it (--force writes a new one).`);
  } else {
    const found = vendorsFound(io.env);
    if (found.length === 0) {
      throw new CliError(
        "agent init: no model vendor credential found. Set one of ANTHROPIC_API_KEY, OPENAI_API_KEY, " +
          "GEMINI_API_KEY (or GOOGLE_API_KEY), XAI_API_KEY, or OPENAI_BASE_URL together with OPENAI_MODEL " +
          "for an OpenAI-compatible server, then run `agent init` again.",
        EXIT.ERROR,
      );
    }
    writeFileSync(path, initConfigText(found, dir), { mode: 0o644 });
    const [first, ...rest] = found.map((f) => f.vendor);
    line(io.out, `Wrote ${path}`);
    line(
      io.out,
      `  model: ${first!.provider}/${first!.primary}${rest.length > 0 ? ` (fallbacks: ${rest.map((v) => `${v.provider}/${v.primary}`).join(", ")})` : ""}`,
    );
    line(io.out, `  tools: ${DEFAULT_TOOL_PROVIDERS.join(", ")}; reads run freely, changes ask first`);
  }
  // Like `terraform init`: every required provider resolved, installed and locked.
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) {
    line(io.err, formatDiagnostics(loaded.diagnostics));
    line(io.err, "Fix agent.hcl, then run `agent providers lock` to install its providers and write the lock file.");
    return EXIT.ERROR;
  }
  const locked = await lockProject(io, dir, loaded.config, "lock");
  if (locked !== EXIT.OK) return locked;
  line(io.out);
  line(io.out, "Next: read it over, check it with `agent validate`, then start a session with `agent run`");
  line(io.out, '(or headless: `agent run -p "describe this repository"`). Commit agent.hcl and .agent/agent.lock.hcl.');
  return EXIT.OK;
}
