// Our `agent` CLI: `agent run -p` with the Anthropic provider pointed at the fake and the
// first-party tool providers, configured by an agent.hcl in the working directory.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ToolCallSpec } from "@pluggableharness/fake-vendors";
import type {
  Action,
  Availability,
  BenchEnv,
  Harness,
  ProjectOptions,
  RunContext,
  ToolContext,
} from "./types.ts";
import { baseEnv, pickDeclared } from "./types.ts";

export const OUR_MODEL = "claude-sonnet-4-6";
/** The tool providers of the built-in default configuration, plus its context provider. */
const TOOL_PROVIDERS = ["filesystem", "search", "exec", "web", "user", "task"];
const CONTEXT_PROVIDERS = ["project-context"];
const ROOTED = ["filesystem", "search", "exec"];

/** The `agent` executable as installed: the CLI package's declared bin. */
export function agentBin(root: string): string {
  const dir = join(root, "packages", "cli");
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { bin: { agent: string } };
  return join(dir, pkg.bin.agent);
}

export function slowToolMain(root: string): string {
  return join(root, "bench", "fixtures", "slow-tool", "src", "main.ts");
}

/** First-party providers present in this checkout (a provider still being written is left out). */
export function presentProviders(root: string): { tools: string[]; context: string[]; missing: string[] } {
  const has = (n: string) => existsSync(join(root, "providers", n, "src", "main.ts"));
  return {
    tools: TOOL_PROVIDERS.filter(has),
    context: CONTEXT_PROVIDERS.filter(has),
    missing: [...TOOL_PROVIDERS, ...CONTEXT_PROVIDERS].filter((n) => !has(n)),
  };
}

export function agentHcl(
  root: string,
  projectDir: string,
  fakeUrl: string,
  options: ProjectOptions = {},
): string {
  const { tools, context } = presentProviders(root);
  const required = ["anthropic", ...tools, ...context].map(
    (n) => `  ${n} = {\n    source  = "pluggableharness/${n}"\n    version = ">= 0.0.0"\n  }`,
  );
  const toolPatterns = tools.map((n) => `"${n}.*"`);
  // The file tools only touch paths under their roots, which must be absolute.
  const rooted = tools.filter((n) => ROOTED.includes(n));
  // web_search needs a key to configure; it is never called, and would reach only the fake.
  const web = tools.includes("web")
    ? `\nprovider "web" {\n  search_api_key  = env("BENCH_SEARCH_API_KEY")\n  search_base_url = "${fakeUrl}"\n}\n`
    : "";
  if (options.slowTool) {
    required.push(
      `  slow = {\n    source  = "github.com/bench-fixtures/provider-slow"\n    version = ">= 0.0.0"\n  }`,
    );
    toolPatterns.push(`"slow.*"`);
  }
  return `# Written by bench/harnesses/ours.ts for one benchmark run.
required_providers {
${required.join("\n")}
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = "${fakeUrl}"
}
${rooted.map((n) => `\nprovider "${n}" {\n  roots = [${JSON.stringify(projectDir)}]\n}\n`).join("")}${web}
policy "bench_allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

policy "bench_allow_changes" {
  match  = { kind = "resource" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "${OUR_MODEL}"
    }
  }

  tools     = [${toolPatterns.join(", ")}]
  max_turns = 200
}
`;
}

function version(root: string): string {
  const pkg = JSON.parse(readFileSync(join(root, "packages", "cli", "package.json"), "utf8")) as {
    version: string;
  };
  let rev = "";
  try {
    rev = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
  } catch {
    // not a git checkout
  }
  return rev ? `${pkg.version} (${rev})` : pkg.version;
}

const TOOLS = { read: "read_file", grep: "grep", edit: "edit_file", bash: "bash", slow: "slow_lookup" };

function call(action: Action, ctx: ToolContext): ToolCallSpec {
  const name = (base: string) => pickDeclared(ctx.declared, base, "ours");
  switch (action.op) {
    case "read":
      return { name: name(TOOLS.read), args: { path: action.path } };
    case "grep":
      return { name: name(TOOLS.grep), args: { pattern: action.pattern, path: action.dir } };
    case "edit":
      return {
        name: name(TOOLS.edit),
        args: { path: action.path, old_str: action.old, new_str: action.new },
      };
    case "bash":
      return { name: name(TOOLS.bash), args: { command: action.command } };
    case "slow":
      return { name: name(TOOLS.slow), args: { id: action.id, ms: action.ms } };
  }
}

/** The environment of every `agent` process: a fresh HOME and the fake credentials agent.hcl names. */
export function oursEnv(home: string): Record<string, string> {
  return {
    ...baseEnv(home),
    ANTHROPIC_API_KEY: "sk-fake-bench",
    BENCH_SEARCH_API_KEY: "sk-fake-bench",
    // BENCH_AGENT_TRACE=<file>: the kernel's step timeline of ours (each run overwrites it).
    ...(process.env["BENCH_AGENT_TRACE"] ? { AGENT_TRACE: process.env["BENCH_AGENT_TRACE"] } : {}),
    // BENCH_PLUGIN_ISOLATION=process|worker: every first-party plugin on that transport.
    ...(isolationOverride() ? { AGENT_PLUGIN_ISOLATION: isolationOverride()! } : {}),
  };
}

/** The transport BENCH_PLUGIN_ISOLATION asks for, if any. */
export function isolationOverride(): "process" | "worker" | undefined {
  const v = process.env["BENCH_PLUGIN_ISOLATION"];
  if (v === undefined || v === "") return undefined;
  if (v !== "process" && v !== "worker")
    throw new Error(`BENCH_PLUGIN_ISOLATION must be process or worker, not ${v}`);
  return v;
}

export const ours: Harness = {
  id: "ours",
  label: "ours (agent)",
  kind: "ours",
  async prepare(env: BenchEnv): Promise<Availability> {
    if (!existsSync(agentBin(env.root))) {
      return { ok: false, reason: `not yet available: ${agentBin(env.root)} does not exist` };
    }
    const { missing } = presentProviders(env.root);
    return {
      ok: true,
      version: version(env.root),
      ...(missing.length > 0
        ? { note: `providers not in this checkout, left out: ${missing.join(", ")}` }
        : {}),
    };
  },
  setupHome(home: string, env: BenchEnv): void {
    const dir = join(home, ".config", "agent");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.hcl"), `dev_overrides {\n  slow = "${slowToolMain(env.root)}"\n}\n`);
  },
  setupProject(dir: string, env: BenchEnv, options?: ProjectOptions): void {
    writeFileSync(join(dir, "agent.hcl"), agentHcl(env.root, dir, env.fakeUrl, options));
  },
  spec(run: RunContext, env: BenchEnv) {
    return {
      command: process.execPath,
      args: [
        agentBin(env.root),
        "run",
        "-p",
        run.prompt,
        "--output-format",
        run.output === "stream" ? "stream-json" : "text",
      ],
      env: oursEnv(run.home),
      cwd: run.cwd,
    };
  },
  tools: {
    mapping: {
      read: "filesystem read_file",
      grep: "search grep",
      edit: "filesystem edit_file",
      bash: "exec bash",
      slow: "slow slow_lookup (bench fixture, data_source, safe: true)",
    },
    call,
  },
};
