// The workspace-context provider's executable: a ContextService.
import type { JsonObject } from "@bufbuild/protobuf";
import { Stability } from "@pluggableharness/protocol/content";
import { SANDBOX_MODES, type SandboxMode } from "@pluggableharness/runtime/sandbox";
import {
  type ConfigField,
  checkTokenBudget,
  configError,
  type Diagnostic,
  serveContextProvider,
  TOKEN_BUDGET_FIELD,
} from "@pluggableharness/tool-kit";
import { contribute, type Options, PROVIDER } from "./contribute.ts";

const DEFAULT_TOKEN_BUDGET = 2_000;

const CONFIG: readonly ConfigField[] = [
  TOKEN_BUDGET_FIELD,
  {
    name: "git",
    type: "bool",
    default: true,
    description: "Contribute the git state (branch, status, recent commits).",
  },
  {
    name: "sandbox",
    type: "string",
    default: "best_effort",
    description:
      'The OS sandbox (bubblewrap) git runs in, read-only and without network: "required" (leave the git ' +
      'state out where it cannot run), "best_effort" (run git unconfined there, and say so once in the log), or ' +
      '"off". Either way git runs with the repository\'s program-starting settings neutralised.',
  },
  {
    name: "recent_commits",
    type: "number",
    default: 5,
    description: "How many recent commits the git state lists.",
  },
  {
    name: "max_status_entries",
    type: "number",
    default: 40,
    description: 'Status lines listed before "... N more".',
  },
  {
    name: "file_tree",
    type: "bool",
    default: true,
    description: "Contribute a file-tree summary of the working directory.",
  },
  {
    name: "tree_max_entries",
    type: "number",
    default: 150,
    description: "Entries the file tree lists at most.",
  },
  {
    name: "tree_max_depth",
    type: "number",
    default: 3,
    description: "Directory levels the file tree descends.",
  },
  {
    name: "files_touched",
    type: "bool",
    default: true,
    description: "List the files the session's tool calls have named.",
  },
  {
    name: "max_files_touched",
    type: "number",
    default: 30,
    description: "Files touched listed at most (the most recent).",
  },
];

let options: Options = {
  git: true,
  sandbox: "best_effort",
  recentCommits: 5,
  maxStatusEntries: 40,
  fileTree: true,
  treeMaxEntries: 150,
  treeMaxDepth: 3,
  filesTouched: true,
  maxFilesTouched: 30,
  defaultBudget: DEFAULT_TOKEN_BUDGET,
};

function applyConfig(values: JsonObject): Diagnostic[] {
  const problems = checkTokenBudget(values["token_budget"]);
  const counts: [string, number, number][] = [
    ["recent_commits", 0, 100],
    ["max_status_entries", 1, 1000],
    ["tree_max_entries", 1, 5000],
    ["tree_max_depth", 1, 20],
    ["max_files_touched", 1, 1000],
  ];
  for (const [name, min, max] of counts) {
    const v = values[name] as number;
    if (!Number.isInteger(v) || v < min || v > max)
      problems.push(configError([name], `${name} must be a whole number from ${min} to ${max}`));
  }
  const sandbox = values["sandbox"] as string;
  if (!SANDBOX_MODES.includes(sandbox as SandboxMode))
    problems.push(configError(["sandbox"], `sandbox must be one of ${SANDBOX_MODES.join(", ")}`));
  if (problems.length > 0) return problems;
  options = {
    git: values["git"] as boolean,
    sandbox: sandbox as SandboxMode,
    recentCommits: values["recent_commits"] as number,
    maxStatusEntries: values["max_status_entries"] as number,
    fileTree: values["file_tree"] as boolean,
    treeMaxEntries: values["tree_max_entries"] as number,
    treeMaxDepth: values["tree_max_depth"] as number,
    filesTouched: values["files_touched"] as boolean,
    maxFilesTouched: values["max_files_touched"] as number,
    defaultBudget: DEFAULT_TOKEN_BUDGET,
  };
  return [];
}

await serveContextProvider({
  packageJson: new URL("../package.json", import.meta.url),
  name: PROVIDER,
  config: CONFIG,
  defaultTokenBudget: DEFAULT_TOKEN_BUDGET,
  stability: Stability.DYNAMIC,
  apply: applyConfig,
  contribute: (req, kernel) => contribute(req, kernel, options),
});
