// The search provider's agent.hcl block and the paths it resolves.
import { relative, sep } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  Jail,
  type ResolvedPath,
  readRuleFields,
  readRulesFrom,
  rootsField,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { type WalkResult, walk } from "./walk.ts";

export const CONFIG: readonly ConfigField[] = [
  rootsField(
    "Directories that may be searched (relative ones are taken from the directory of agent.hcl); search paths must resolve inside one of them.",
    { required: true },
  ),
  {
    name: "max_file_bytes",
    type: "number",
    default: 4 * 1024 * 1024,
    description: "grep skips files larger than this.",
  },
  ...readRuleFields("search"),
  {
    name: "allow_hard_links",
    type: "bool",
    default: false,
    description:
      "Search files that have more than one hard link. Off by default: another link to such a file may be outside the roots, and nothing tells where the others are.",
  },
];

/** Most entries one walk visits. */
export const WALK_LIMIT = 200_000;

/**
 * Walks a resolved search path inside its configured root, under the configured jail:
 * at most WALK_LIMIT entries, and what the jail hides is not even listed.
 */
export function walkSearchPath(
  target: { readonly root: string; readonly real: string },
  includeIgnored: boolean,
  signal: AbortSignal,
): Promise<WalkResult> {
  return walk({
    jail: settings().jail,
    root: target.root,
    start: target.real,
    includeIgnored,
    limit: WALK_LIMIT,
    signal,
    skip: (abs) => settings().jail.skipInWalk(abs),
  });
}

interface Settings {
  jail: Jail;
  maxFileBytes: number;
}

let current: Settings | undefined;

export function settings(): Settings {
  if (!current)
    throw new ToolFailure(
      "permission_denied",
      "the search provider has no configured roots, so nothing may be searched",
    );
  return current;
}

export async function configure(values: JsonObject): Promise<Diagnostic[]> {
  const maxFileBytes = values["max_file_bytes"] as number;
  if (!Number.isInteger(maxFileBytes) || maxFileBytes < 1) {
    return [configError(["max_file_bytes"], "max_file_bytes must be a positive integer")];
  }
  // Credential stores are never searched, listed or read (tool-kit credentials.ts).
  const { rules, problems } = readRulesFrom(values, {
    home: process.env["HOME"],
    env: process.env,
    setting: "allow_read in the search provider block",
  });
  if (problems.length > 0) return problems;
  try {
    current = {
      jail: await Jail.create(values["roots"] as string[], {
        allowHardLinks: values["allow_hard_links"] === true,
        readRules: rules,
      }),
      maxFileBytes,
    };
  } catch (err) {
    return [configError(["roots"], "Invalid root", (err as Error).message)];
  }
  return [];
}

/** The directory (or file) to search, resolved inside the roots. */
export async function searchTarget(path: string | undefined, cwd: string | undefined): Promise<ResolvedPath> {
  const target = await settings().jail.resolve(path ?? ".", cwd);
  if (!target.exists) throw new ToolFailure("not_found", `${path ?? "."} does not exist`);
  return target;
}

/**
 * How a found file is named in results: relative to the working directory when it lies
 * inside it, absolute otherwise.
 */
export async function namer(cwd: string | undefined): Promise<(abs: string) => string> {
  let base: string | undefined;
  if (cwd) {
    try {
      const r = await settings().jail.resolve(cwd, undefined);
      if (r.exists) base = r.real;
    } catch {
      base = undefined;
    }
  }
  return (abs) => {
    if (!base) return abs;
    const rel = relative(base, abs);
    if (rel === "" || rel.startsWith("..")) return abs;
    return sep === "/" ? rel : rel.split(sep).join("/");
  };
}
