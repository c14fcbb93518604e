// The project-context provider's executable: a ContextService.

import { stat } from "node:fs/promises";
import { isAbsolute } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { Stability } from "@pluggableharness/protocol/content";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  serveContextProvider,
} from "@pluggableharness/tool-kit";
import { contribute, type Options, PROVIDER } from "./contribute.ts";

const DEFAULT_TOKEN_BUDGET = 8_000;

const CONFIG: readonly ConfigField[] = [
  {
    name: "base_instructions",
    type: "bool",
    default: true,
    description: "Contribute the built-in coding-agent instructions.",
  },
  {
    name: "extra_instructions",
    type: "string",
    default: "",
    description: "Text appended to the base instructions.",
  },
  {
    name: "file_names",
    type: "list_string",
    default: ["AGENTS.md", "CLAUDE.md"],
    description:
      "Convention file names looked for in each directory from the repository root to the working directory.",
  },
  {
    name: "extra_files",
    type: "list_string",
    default: [],
    description: "Further absolute file paths to contribute after the convention files; each must exist.",
  },
];

let options: Options = {
  baseInstructions: true,
  extraInstructions: "",
  fileNames: ["AGENTS.md", "CLAUDE.md"],
  extraFiles: [],
  defaultBudget: DEFAULT_TOKEN_BUDGET,
};

async function applyConfig(values: JsonObject): Promise<Diagnostic[]> {
  const problems: Diagnostic[] = [];
  const names = values["file_names"] as string[];
  if (names.some((n) => n === "" || n.includes("/")))
    problems.push(configError(["file_names"], "file names must be plain names"));
  const extra = values["extra_files"] as string[];
  for (const [i, path] of extra.entries()) {
    if (!isAbsolute(path)) {
      problems.push(configError(["extra_files", String(i)], `${path} is not an absolute path`));
      continue;
    }
    const st = await stat(path).catch(() => undefined);
    if (!st?.isFile())
      problems.push(configError(["extra_files", String(i)], `${path} does not exist or is not a file`));
  }
  if (problems.length > 0) return problems;
  options = {
    baseInstructions: values["base_instructions"] as boolean,
    extraInstructions: values["extra_instructions"] as string,
    fileNames: names,
    extraFiles: extra,
    defaultBudget: DEFAULT_TOKEN_BUDGET,
  };
  return [];
}

await serveContextProvider({
  packageJson: new URL("../package.json", import.meta.url),
  name: PROVIDER,
  config: CONFIG,
  defaultTokenBudget: DEFAULT_TOKEN_BUDGET,
  stability: Stability.STATIC,
  apply: applyConfig,
  contribute: (req, kernel) => contribute(req, kernel, options),
});
