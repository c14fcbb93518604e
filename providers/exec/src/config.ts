// The exec provider's agent.hcl block.
import { isAbsolute } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { type ConfigField, configError, type Diagnostic, Jail } from "@pluggableharness/tool-kit";

export const CONFIG: readonly ConfigField[] = [
  {
    name: "shell",
    type: "string",
    default: "/bin/bash",
    description: "Shell that runs commands as `<shell> -c <command>`.",
  },
  {
    name: "roots",
    type: "list_string",
    path: true,
    description:
      "If set, commands only run when call_context.working_directory lies inside one of these directories " +
      "(relative ones are taken from the directory of agent.hcl). " +
      "This does not sandbox what a command itself touches.",
  },
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
  maxOutputBytes: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  killGraceMs: number;
}

export const DEFAULTS: Settings = {
  shell: "/bin/bash",
  jail: undefined,
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
  const num = (name: string, min: number) => {
    const v = values[name] as number;
    if (!Number.isInteger(v) || v < min)
      problems.push(configError([name], `${name} must be an integer of at least ${min}`));
    return v;
  };
  const maxOutputBytes = num("max_output_bytes", 1024);
  const defaultTimeoutMs = num("default_timeout_ms", 100);
  const maxTimeoutMs = num("max_timeout_ms", 100);
  const killGraceMs = num("kill_grace_ms", 0);
  if (defaultTimeoutMs > maxTimeoutMs) {
    problems.push(configError(["default_timeout_ms"], "default_timeout_ms must not exceed max_timeout_ms"));
  }
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
  settings = { shell, jail, maxOutputBytes, defaultTimeoutMs, maxTimeoutMs, killGraceMs };
  return [];
}
