// The exec provider's agent.hcl block.
import { isAbsolute } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  integerAtLeast,
  Jail,
  readRuleFields,
  readRulesFrom,
  rootsField,
} from "@pluggableharness/tool-kit";
import { SANDBOX_MODES, type SandboxMode } from "./sandbox.ts";

export const CONFIG: readonly ConfigField[] = [
  {
    name: "shell",
    type: "string",
    default: "/bin/bash",
    description: "Shell that runs commands as `<shell> -c <command>`.",
  },
  rootsField(
    "If set, commands only run when call_context.working_directory lies inside one of these directories " +
      "(relative ones are taken from the directory of agent.hcl), " +
      "and in the sandbox these are the directories a command may write (without roots: the working directory).",
  ),
  {
    name: "sandbox",
    type: "string",
    default: "best_effort",
    description:
      'The OS sandbox (bubblewrap) for commands: "required" (refuse to run a command without it), ' +
      '"best_effort" (run unconfined where it cannot work, and say so once), or "off".',
  },
  {
    name: "network",
    type: "bool",
    default: false,
    description: "Whether sandboxed commands may use the whole network (default: no network at all).",
  },
  {
    name: "allowed_hosts",
    type: "list_string",
    description:
      "Without network = true: hosts sandboxed commands may reach through an HTTP(S) proxy the provider runs " +
      "(a domain includes its subdomains); tools find it through HTTP_PROXY/HTTPS_PROXY.",
  },
  {
    name: "secret_env_patterns",
    type: "list_string",
    description:
      "More environment variable name patterns (`*` wildcard, case-insensitive) withheld from commands, on top of " +
      "the kernel's: every variable an env() in the configuration reads and *KEY*, *SECRET*, *TOKEN*, *PASSWORD*.",
  },
  ...readRuleFields("exec"),
  {
    name: "max_output_bytes",
    type: "number",
    default: 64 * 1024,
    description: "Output (stdout and stderr together) passed on per call; the rest is dropped with a notice.",
  },
  {
    name: "default_timeout_ms",
    type: "number",
    default: 120_000,
    description: "Command deadline when the call sets none.",
  },
  {
    name: "max_timeout_ms",
    type: "number",
    default: 600_000,
    description: "Largest timeout_ms a call may ask for.",
  },
  {
    name: "kill_grace_ms",
    type: "number",
    default: 2_000,
    description: "Wait between SIGTERM and SIGKILL when stopping a command.",
  },
];

export interface Settings {
  shell: string;
  jail: Jail | undefined;
  sandbox: SandboxMode;
  network: boolean;
  allowedHosts: string[];
  secretPatterns: string[];
  /** deny_read/allow_read as written (expanded per command against the user's HOME). */
  denyRead: string[];
  allowRead: string[];
  maxOutputBytes: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  killGraceMs: number;
}

export const DEFAULTS: Settings = {
  shell: "/bin/bash",
  jail: undefined,
  sandbox: "best_effort",
  network: false,
  allowedHosts: [],
  secretPatterns: [],
  denyRead: [],
  allowRead: [],
  maxOutputBytes: 64 * 1024,
  defaultTimeoutMs: 120_000,
  maxTimeoutMs: 600_000,
  killGraceMs: 2_000,
};

/** Works unconfigured with the defaults; Configure may change them. */
export let settings: Settings = DEFAULTS;

export async function configure(values: JsonObject): Promise<Diagnostic[]> {
  const problems: Diagnostic[] = [];
  const shell = values["shell"] as string;
  if (!isAbsolute(shell)) problems.push(configError(["shell"], "shell must be an absolute path"));
  const num = (name: string, min: number) => integerAtLeast(values, problems, name, min);
  const maxOutputBytes = num("max_output_bytes", 1024);
  const defaultTimeoutMs = num("default_timeout_ms", 100);
  const maxTimeoutMs = num("max_timeout_ms", 100);
  const killGraceMs = num("kill_grace_ms", 0);
  if (defaultTimeoutMs > maxTimeoutMs) {
    problems.push(configError(["default_timeout_ms"], "default_timeout_ms must not exceed max_timeout_ms"));
  }
  const sandbox = (values["sandbox"] ?? "best_effort") as SandboxMode;
  if (!SANDBOX_MODES.includes(sandbox)) {
    problems.push(
      configError(["sandbox"], `sandbox must be one of ${SANDBOX_MODES.map((m) => `"${m}"`).join(", ")}`),
    );
  }
  const network = values["network"] === true;
  const allowedHosts = ((values["allowed_hosts"] as string[] | undefined) ?? []).filter(
    (h) => h.trim() !== "",
  );
  for (const h of allowedHosts) {
    if (!/^(\*\.)?[A-Za-z0-9.-]+$/.test(h))
      problems.push(configError(["allowed_hosts"], `not a host name: ${h}`));
  }
  const secretPatterns = ((values["secret_env_patterns"] as string[] | undefined) ?? []).filter(
    (p) => p !== "",
  );
  // Checked now, so a bad entry is a configuration error; applied per command.
  const denyRead = (values["deny_read"] as string[] | undefined) ?? [];
  const allowRead = (values["allow_read"] as string[] | undefined) ?? [];
  problems.push(...readRulesFrom(values, { setting: "allow_read in the exec provider block" }).problems);
  let jail: Jail | undefined;
  // An omitted list arrives as its zero value [] (the schema bridge's rule): no roots.
  const roots = values["roots"] as string[] | undefined;
  if (roots && roots.length > 0 && problems.length === 0) {
    try {
      jail = await Jail.create(roots);
    } catch (err) {
      problems.push(configError(["roots"], "Invalid root", (err as Error).message));
    }
  }
  if (problems.length > 0) return problems;
  settings = {
    shell,
    jail,
    sandbox,
    network,
    allowedHosts,
    secretPatterns,
    denyRead,
    allowRead,
    maxOutputBytes,
    defaultTimeoutMs,
    maxTimeoutMs,
    killGraceMs,
  };
  return [];
}
