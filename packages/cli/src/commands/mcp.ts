// `agent mcp add|list|remove`: MCP servers in agent.hcl, each one provider instance of the
// first-party bridge (docs/decisions/mcp.md). The conventions follow `claude mcp add` and
// `codex mcp add`: a name, then the command after `--` (or a URL), `-e/--env`, `--header`,
// `--transport`. A secret is never written into the file: `-e NAME` writes env("NAME").
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  decodeProviderConfig,
  devOverridePaths,
  formatDiagnostic,
  isSecretName,
  loadConfigSource,
  loadGlobalConfig,
  loadProjectConfig,
  resolveProviders,
} from "@pluggableharness/config";
import { EXIT } from "../exit-codes.ts";
import { inspectProviders, installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import {
  addServer,
  EditError,
  listServers,
  removeServer,
  type ServerSpec,
  type Written,
} from "../mcp-edit.ts";
import { projectOf } from "../project.ts";

export interface AddOptions {
  dir?: string;
  transport?: string;
  env?: string[];
  header?: string[];
  bearerTokenEnvVar?: string;
  trustReadOnlyHint?: boolean;
  network?: boolean;
  sandbox?: string;
  cwd?: string;
  /** Start the server once to check it (default true; `--no-check`). */
  check?: boolean;
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

function projectFile(io: Io, dir: string | undefined): string {
  const project = projectOf(io, dir);
  if (project.file === undefined) {
    throw new CliError(`no agent.hcl in ${project.dir} or above it: run \`agent init\` first`, EXIT.ERROR);
  }
  return project.file;
}

function envEntry(spec: string): [string, Written] {
  const eq = spec.indexOf("=");
  const name = eq < 0 ? spec : spec.slice(0, eq);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new CliError(`--env ${spec}: not a variable name`, EXIT.USAGE);
  if (eq < 0) return [name, { env: name }];
  const value = spec.slice(eq + 1);
  if (isSecretName(name)) {
    throw new CliError(
      `--env ${name}=…: ${name} looks like a secret, and agent.hcl holds secrets only as env(). ` +
        `Write --env ${name} (it reads $${name} when the agent starts) and set it in your environment.`,
      EXIT.USAGE,
    );
  }
  return [name, { literal: value }];
}

function headerEntry(spec: string): [string, Written] {
  const colon = spec.indexOf(":");
  if (colon <= 0)
    throw new CliError(`--header ${JSON.stringify(spec)}: write it as "Name: value"`, EXIT.USAGE);
  const name = spec.slice(0, colon).trim();
  const value = spec.slice(colon + 1).trim();
  // `--header "X-Api-Key: $env:MY_KEY"`: the value read from the environment when the agent starts.
  const fromEnv = /^\$env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(value);
  if (fromEnv) return [name, { env: fromEnv[1]! }];
  if (isSecretName(name)) {
    throw new CliError(
      `--header ${name}: …: a credential is never written into agent.hcl. Use --bearer-token-env-var VAR ` +
        `(Authorization: Bearer $VAR) or --header "${name}: $env:VAR".`,
      EXIT.USAGE,
    );
  }
  return [name, { literal: value }];
}

export function serverSpec(name: string, target: string[], opts: AddOptions): ServerSpec {
  if (!NAME.test(name)) {
    throw new CliError(
      `${JSON.stringify(name)} is not a usable name: letters, digits, - and _ (starting with a letter)`,
      EXIT.USAGE,
    );
  }
  if (target.length === 0) throw new CliError("give the server's command (after --) or its URL", EXIT.USAGE);
  const looksUrl = /^https?:\/\//i.test(target[0]!);
  const transport = (opts.transport ?? (looksUrl ? "http" : "stdio")).toLowerCase();
  if (transport !== "stdio" && transport !== "http" && transport !== "sse") {
    throw new CliError(`--transport ${opts.transport}: one of stdio, http, sse`, EXIT.USAGE);
  }
  const remote = transport !== "stdio";
  if (remote && (target.length !== 1 || !looksUrl)) {
    throw new CliError(`--transport ${transport} takes one http(s):// URL`, EXIT.USAGE);
  }
  if (!remote && looksUrl) throw new CliError("a URL needs --transport http or sse", EXIT.USAGE);
  const env = (opts.env ?? []).map(envEntry);
  const headers = (opts.header ?? []).map(headerEntry);
  if (opts.bearerTokenEnvVar) {
    headers.push(["Authorization", { template: "Bearer %s", env: opts.bearerTokenEnvVar }]);
  }
  if (remote && env.length > 0)
    throw new CliError("--env is for a local server; a remote one takes --header", EXIT.USAGE);
  if (!remote && headers.length > 0)
    throw new CliError("--header is for a remote server (http, sse)", EXIT.USAGE);
  const extra: Array<[string, string | boolean]> = [];
  if (opts.cwd) extra.push(["cwd", opts.cwd]);
  if (opts.sandbox) extra.push(["sandbox", opts.sandbox]);
  if (opts.network) extra.push(["network", true]);
  if (opts.trustReadOnlyHint) extra.push(["trust_read_only_hint", true]);
  return {
    name,
    transport: transport as ServerSpec["transport"],
    ...(remote ? { url: target[0]! } : { command: target }),
    env,
    headers,
    extra,
  };
}

/** Writes the edit only if the result still loads (atomically: a temp file, then a rename). */
export function commit(io: Io, file: string, text: string): void {
  const dir = resolve(file, "..");
  const check = loadConfigSource(text, file, dir);
  const errors = check.ok ? [] : check.diagnostics.filter((d) => d.severity === "error");
  // env() of a variable not set here is not the edit's fault: the user sets it before running.
  const blocking = errors.filter((d) => d.category !== "env_unset");
  if (blocking.length > 0) {
    for (const d of blocking) line(io.err, formatDiagnostic(d));
    throw new CliError(`agent.hcl was left unchanged: the edited file would not load`, EXIT.ERROR);
  }
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

export async function runMcpAdd(io: Io, name: string, target: string[], opts: AddOptions): Promise<number> {
  const file = projectFile(io, opts.dir);
  const spec = serverSpec(name, target, opts);
  let edited: ReturnType<typeof addServer>;
  try {
    edited = addServer(readFileSync(file, "utf8"), file, spec);
  } catch (err) {
    if (err instanceof EditError) throw new CliError(err.message, EXIT.ERROR);
    throw err;
  }
  commit(io, file, edited.text);
  line(io.out, `Added MCP server "${name}" to ${file}.`);
  for (const p of edited.profiles) line(io.out, `  agent_profile "${p}" now lists "${name}.*".`);
  const unset = spec.env
    .flatMap(([, w]) => ("env" in w ? [w.env] : []))
    .concat(spec.headers.flatMap(([, w]) => ("env" in w ? [w.env] : [])))
    .filter((v) => io.env[v] === undefined);
  if (unset.length > 0) line(io.out, `  Set ${unset.join(", ")} in your environment before \`agent run\`.`);
  if (opts.check === false) {
    line(
      io.out,
      "Its tools ask before each call unless a policy allows them. Check it with `agent mcp list`.",
    );
    return EXIT.OK;
  }
  // Started once, as a session would start it: a server that does not come up is said now,
  // not discovered at the next run (which goes on without its tools).
  const [server] = listedOf(file).filter((s) => s.name === name);
  if (server && unset.length === 0) {
    await check(io, file, [server]);
    if (server.status === "connected") {
      line(
        io.out,
        `It started and offers ${server.tools} tools; they ask before each call unless a policy allows them.`,
      );
    } else {
      line(
        io.err,
        `agent: warning: MCP server "${name}" did not start: ${(server.error ?? "no answer").replace(/[.\s]+$/, "")}. It is added anyway: sessions start without its tools until it works (check it with \`agent mcp list\`; \`agent mcp remove ${name}\` takes it out).`,
      );
    }
  } else {
    line(
      io.out,
      "Its tools ask before each call unless a policy allows them. Check it with `agent mcp list`.",
    );
  }
  return EXIT.OK;
}

export function runMcpRemove(io: Io, name: string, opts: { dir?: string }): number {
  const file = projectFile(io, opts.dir);
  let text: string;
  try {
    text = removeServer(readFileSync(file, "utf8"), file, name);
  } catch (err) {
    if (err instanceof EditError) throw new CliError(err.message, EXIT.ERROR);
    throw err;
  }
  commit(io, file, text);
  line(io.out, `Removed MCP server "${name}" from ${file}.`);
  return EXIT.OK;
}

interface ListedServer {
  name: string;
  transport: string;
  target: string;
  env: string[];
  headers: string[];
  status?: "connected" | "failed";
  tools?: number;
  error?: string;
}

function unquote(expr: string | undefined): string {
  if (!expr) return "";
  try {
    const v = JSON.parse(expr) as unknown;
    if (typeof v === "string") return v;
    if (Array.isArray(v)) return v.join(" ");
  } catch {
    // an expression, shown as written
  }
  return expr;
}

function keysOf(expr: string | undefined): string[] {
  if (!expr) return [];
  return [...expr.matchAll(/^\s*"?([A-Za-z0-9_-]+)"?\s*=/gm)].map((m) => m[1]!);
}

export async function runMcpList(
  io: Io,
  opts: { dir?: string; json?: boolean; check?: boolean },
): Promise<number> {
  const file = projectFile(io, opts.dir);
  const servers = listedOf(file);
  if (opts.check !== false && servers.length > 0) await check(io, file, servers);
  if (opts.json) {
    line(io.out, JSON.stringify(servers, null, 2));
    return EXIT.OK;
  }
  if (servers.length === 0) {
    line(io.out, "No MCP servers in agent.hcl. Add one with `agent mcp add <name> -- <command> [args...]`.");
    return EXIT.OK;
  }
  for (const s of servers) {
    const status =
      s.status === "connected"
        ? `connected, ${s.tools} tools`
        : s.status === "failed"
          ? `failed: ${s.error}`
          : "";
    line(io.out, `${s.name}  ${s.transport}  ${s.target}${status ? `  (${status})` : ""}`);
    if (s.env.length > 0) line(io.out, `  env: ${s.env.join(", ")}`);
    if (s.headers.length > 0) line(io.out, `  headers: ${s.headers.join(", ")}`);
  }
  return EXIT.OK;
}

/** The MCP servers agent.hcl declares, as `agent mcp list` shows them. */
function listedOf(file: string): ListedServer[] {
  const entries = listServers(readFileSync(file, "utf8"), file);
  return entries.map((e) => ({
    name: e.name,
    transport: unquote(e.attributes["transport"]) || (e.attributes["url"] ? "http" : "stdio"),
    target: unquote(e.attributes["url"] ?? e.attributes["command"]),
    // Names only: values may be secrets (they are env() reads, but never print them).
    env: keysOf(e.attributes["env"]),
    headers: keysOf(e.attributes["headers"]),
  }));
}

/** Starts each server through its bridge, as a session would, and records what it offers. */
async function check(io: Io, file: string, servers: ListedServer[]): Promise<void> {
  const dir = resolve(file, "..");
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) {
    for (const s of servers)
      Object.assign(s, { status: "failed", error: "agent.hcl does not load (agent validate)" });
    return;
  }
  const config = loaded.config;
  const global = loadGlobalConfig({ env: io.env });
  const names = new Set(servers.map((s) => s.name));
  const resolution = resolveProviders(config, {
    installationRoot: installationRoot(),
    devOverrides: global.ok ? devOverridePaths(global.config) : {},
  });
  const facts = await inspectProviders(
    config,
    resolution.providers.filter((p) => names.has(p.localName)),
    {
      configure: (name, schema) => {
        const d = decodeProviderConfig(config, name, schema ?? { attributes: [] }, io.env);
        return d.ok ? d.config.values : undefined;
      },
      env: io.env,
      transports: false,
    },
  );
  for (const s of servers) {
    const f = facts.find((x) => x.resolved.localName === s.name);
    const problem =
      f?.error ?? f?.configureDiagnostics.map((d) => d.detail || d.summary).join("; ") ?? "not resolved";
    if (f && f.error === undefined && f.tools.length > 0)
      Object.assign(s, { status: "connected", tools: f.tools.length });
    else Object.assign(s, { status: "failed", error: problem || "the server offers no tools" });
  }
}
