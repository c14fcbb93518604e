// The provider's configuration: the roots jail and size limits, applied by Configure.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  Jail,
  readRuleFields,
  readRulesFrom,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { recoverJournals } from "./transaction.ts";

export const CONFIG: readonly ConfigField[] = [
  {
    name: "roots",
    type: "list_string",
    required: true,
    path: true,
    description:
      "Directories the tools may touch (relative ones are taken from the directory of agent.hcl). Every path argument must resolve, symbolic links followed, inside one of them.",
  },
  {
    name: "max_read_bytes",
    type: "number",
    default: 256 * 1024,
    description:
      "Most bytes of file content read_file returns in one call; longer output is cut with a notice.",
  },
  {
    name: "max_image_bytes",
    type: "number",
    default: 20 * 1024 * 1024,
    description:
      "Largest image read_file returns as an image (20 MiB); larger ones are described, not shown. The kernel fits every image to the model it is sent to (downscaled, re-encoded), so this bounds only what the session file keeps.",
  },
  {
    name: "max_file_bytes",
    type: "number",
    default: 10 * 1024 * 1024,
    description: "Largest file read_file scans and edit_file, multi_edit and write_file handle.",
  },
  ...readRuleFields("filesystem"),
];

export interface Settings {
  jail: Jail;
  maxReadBytes: number;
  maxFileBytes: number;
  maxImageBytes: number;
}

let current: Settings | undefined;

export function settings(): Settings {
  if (!current) {
    throw new ToolFailure(
      "permission_denied",
      "the filesystem provider has no configured roots, so no path is allowed",
    );
  }
  return current;
}

export async function configure(values: JsonObject): Promise<Diagnostic[]> {
  const roots = values["roots"] as string[];
  const maxReadBytes = values["max_read_bytes"] as number;
  const maxFileBytes = values["max_file_bytes"] as number;
  const maxImageBytes = values["max_image_bytes"] as number;
  const problems: Diagnostic[] = [];
  if (roots.length === 0) problems.push(configError(["roots"], "At least one root is required"));
  for (const [name, v] of [
    ["max_read_bytes", maxReadBytes],
    ["max_file_bytes", maxFileBytes],
    ["max_image_bytes", maxImageBytes],
  ] as const) {
    if (!Number.isInteger(v) || v < 1024)
      problems.push(configError([name], `${name} must be an integer of at least 1024`));
  }
  // Credential stores are neither read nor written (tool-kit credentials.ts).
  const read = readRulesFrom(values, {
    home: process.env["HOME"],
    env: process.env,
    setting: "allow_read in the filesystem provider block",
  });
  problems.push(...read.problems);
  if (problems.length > 0) return problems;
  try {
    current = {
      jail: await Jail.create(roots, { readRules: read.rules }),
      maxReadBytes,
      maxFileBytes,
      maxImageBytes,
    };
    // A multi-file change a crash cut short is rolled back before any call runs.
    await recoverJournals(current.jail.roots);
  } catch (err) {
    return [configError(["roots"], "Invalid root", (err as Error).message)];
  }
  return [];
}
