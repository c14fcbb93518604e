// The git provider's agent.hcl block.
import type { JsonObject } from "@bufbuild/protobuf";
import { SANDBOX_MODES, type SandboxMode } from "@pluggableharness/runtime/sandbox";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  integerAtLeast,
  Jail,
  rootsField,
} from "@pluggableharness/tool-kit";

export const CONFIG: readonly ConfigField[] = [
  rootsField(
    "If set, every repository (the repo argument, else the working directory) must lie inside one of these " +
      "directories, and in the sandbox they are what git may write (without roots: the repository).",
  ),
  {
    name: "git",
    type: "string",
    default: "git",
    description: "The git executable (a name looked up on PATH, or an absolute path).",
  },
  {
    name: "sandbox",
    type: "string",
    default: "best_effort",
    description:
      'The OS sandbox (bubblewrap) git runs in: "required" (refuse to run without it), "best_effort" ' +
      '(run unconfined where it cannot work, and say so once), or "off".',
  },
  {
    name: "hooks",
    type: "bool",
    default: false,
    description:
      "Run the repository's hooks (pre-commit, commit-msg, ...). Off by default: a hook is a program the model " +
      "could have written, run by an operation that is not the shell.",
  },
  {
    name: "network",
    type: "bool",
    default: false,
    description: "Whether git_push may reach the network (without it only remotes inside the roots work).",
  },
  {
    name: "max_output_bytes",
    type: "number",
    default: 256 * 1024,
    description: "Most bytes of git output a data source returns; the rest is cut with a notice.",
  },
  {
    name: "timeout_ms",
    type: "number",
    default: 60_000,
    description: "Deadline of one git command.",
  },
];

export interface Settings {
  jail: Jail | undefined;
  git: string;
  sandbox: SandboxMode;
  hooks: boolean;
  network: boolean;
  maxOutputBytes: number;
  timeoutMs: number;
}

export const settings: Settings = {
  jail: undefined,
  git: "git",
  sandbox: "best_effort",
  hooks: false,
  network: false,
  maxOutputBytes: 256 * 1024,
  timeoutMs: 60_000,
};

export async function configure(values: JsonObject): Promise<Diagnostic[]> {
  const problems: Diagnostic[] = [];
  const sandbox = values["sandbox"] as string;
  if (!SANDBOX_MODES.includes(sandbox as SandboxMode))
    problems.push(configError(["sandbox"], `sandbox must be one of ${SANDBOX_MODES.join(", ")}`));
  for (const name of ["max_output_bytes", "timeout_ms"]) integerAtLeast(values, problems, name, 1000);
  const roots = values["roots"] as string[] | undefined;
  let jail: Jail | undefined;
  if (roots && roots.length > 0) {
    try {
      jail = await Jail.create(roots);
    } catch (err) {
      problems.push(configError(["roots"], "Invalid root", (err as Error).message));
    }
  }
  if (problems.length > 0) return problems;
  Object.assign(settings, {
    jail,
    git: values["git"] as string,
    sandbox: sandbox as SandboxMode,
    hooks: values["hooks"] as boolean,
    network: values["network"] as boolean,
    maxOutputBytes: values["max_output_bytes"] as number,
    timeoutMs: values["timeout_ms"] as number,
  });
  return [];
}
