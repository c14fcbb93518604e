// The environment a user's commands run with (the env policy, docs/decisions/sandbox-and-policy.md): the user's own environment, as they would have it in their shell, minus
// every variable the configuration reads with env() (those are the agent's secrets) and
// every name matching a secret pattern, and without the agent's private Node.js on PATH.

import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { type Expression, envFunction, evaluate, parseFile } from "@pluggableharness/hcl";
import { globalConfigPath } from "./global.ts";

export const DEFAULT_SECRET_PATTERNS: readonly string[] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

type Env = Readonly<Record<string, string | undefined>>;

const ENV_CALL = /\benv\(\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\)/g;

/** Names read by env() in agent.hcl and the global config (the only places env() exists). */
export function envNamesReadByConfig(projectDir: string, env: Env = process.env): string[] {
  const names = new Set<string>();
  for (const file of [join(projectDir, "agent.hcl"), globalConfigPath(env as NodeJS.ProcessEnv)]) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const m of text.matchAll(ENV_CALL)) names.add(m[1]!);
    for (const n of envCallNames(text, file, env)) names.add(n);
  }
  return [...names].sort();
}

/**
 * The names every env() call of a configuration file reads, as the evaluator sees them: a
 * pattern over the text misses `env ("X")`, a comment or newline inside the call, a name
 * built by a template or written with escapes, and env(env("X")). Each call's argument is
 * evaluated on its own (with env() itself available); one that cannot be (it refers to
 * something else) names nothing here, as it reads nothing when the configuration loads.
 */
function envCallNames(text: string, file: string, env: Env): string[] {
  const parsed = parseFile(text, file);
  const functions = { env: envFunction(env) };
  const names: string[] = [];
  const seen = new WeakSet<object>();
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== "object" || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    const call = node as { kind?: unknown; name?: unknown; args?: unknown };
    if (
      call.kind === "FunctionCall" &&
      call.name === "env" &&
      Array.isArray(call.args) &&
      call.args.length === 1
    ) {
      const r = evaluate(call.args[0] as Expression, { functions });
      if (typeof r.value === "string") names.push(r.value);
    }
    // Source positions hold no expressions.
    for (const [k, v] of Object.entries(node)) if (!/range$/i.test(k)) visit(v);
  };
  visit(parsed.file.body);
  return names;
}

function patternRegex(p: string): RegExp {
  return new RegExp(`^${p.replace(/[\\^$.+?()[\]{}|/]/g, "\\$&").replace(/\*/g, ".*")}$`, "i");
}

export interface ExecEnvironment {
  variables: Record<string, string>;
  withheld: string[];
}

export interface ExecEnvironmentOptions {
  /** Names read by env() in the configuration. */
  readonly configNames: readonly string[];
  /** Extra patterns on top of DEFAULT_SECRET_PATTERNS. */
  readonly patterns?: readonly string[];
  /** The agent's installation root: PATH entries inside it are the agent's own, not the user's. */
  readonly installationRoot?: string;
  /** The Node binary running the agent (process.execPath). */
  readonly execPath?: string;
}

/** Applies the env policy to `source` (the kernel's environment, which is the user's). */
export function execEnvironment(source: Env, options: ExecEnvironmentOptions): ExecEnvironment {
  const patterns = [...DEFAULT_SECRET_PATTERNS, ...(options.patterns ?? [])].map(patternRegex);
  const named = new Set(options.configNames);
  const variables: Record<string, string> = {};
  const withheld: string[] = [];
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    // npm's per-script variables describe the agent's launch, not the user's shell.
    if (name.startsWith("npm_") || name === "INIT_CWD" || name === "NODE") continue;
    if (named.has(name) || patterns.some((p) => p.test(name))) {
      withheld.push(name);
      continue;
    }
    variables[name] = value;
  }
  if (variables["PATH"] !== undefined) variables["PATH"] = userPath(variables["PATH"], options);
  return { variables, withheld: withheld.sort() };
}

function userPath(path: string, options: ExecEnvironmentOptions): string {
  const root = options.installationRoot ? resolve(options.installationRoot) : undefined;
  const nodeDir = options.execPath ? dirname(resolve(options.execPath)) : undefined;
  const own = (entry: string) => {
    if (entry === "") return false;
    const abs = resolve(entry);
    if (
      root &&
      (abs === join(root, "node_modules", ".bin") || abs.startsWith(`${join(root, "node_modules")}${sep}`))
    )
      return true;
    // The private Node.js the agent installed for itself (node@24 under node_modules).
    return nodeDir !== undefined && abs === nodeDir && nodeDir.includes(`${sep}node_modules${sep}`);
  };
  return path
    .split(":")
    .filter((e) => !own(e))
    .join(":");
}

/**
 * The values of the variables withheld from commands, for masking: every variable an
 * env() in agent.hcl or the global config reads, whatever its name, and every
 * secret-named one, except paths that exist (docs/security/mcp.md).
 */
export function withheldValues(projectDir: string, env: Env): string[] {
  const e = execEnvironment(env, { configNames: envNamesReadByConfig(projectDir, env) });
  return e.withheld.flatMap((n) => {
    const v = env[n];
    // A path to something on this machine (roots = [env("WORK")]) is a location, not a
    // credential: masking it would garble every path a file tool reports, and a later edit
    // could write the marker back. It stays withheld from commands all the same.
    if (!v || (isAbsolute(v) && existsSync(v))) return [];
    return [v];
  });
}
