// The provider's configuration: the roots jail and size limits, applied by Configure.
import type { JsonObject } from "@bufbuild/protobuf";
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import {
  type ConfigField,
  type ConfigureContext,
  configError,
  configWarning,
  type Diagnostic,
  Jail,
  readRuleFields,
  readRulesFrom,
  rootsField,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { useSettings } from "./settings.ts";
import { recoverJournals } from "./transaction.ts";

export const CONFIG: readonly ConfigField[] = [
  rootsField(
    "Directories the tools may touch (relative ones are taken from the directory of agent.hcl). Every path argument must resolve, symbolic links followed, inside one of them.",
    { required: true },
  ),
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
  {
    name: "allow_hard_links",
    type: "bool",
    default: false,
    description:
      "Read files that have more than one hard link. Off by default: another link to such a file may be outside the roots (a hard link to a secret), and nothing tells where the others are.",
  },
];

/**
 * The kernel's own paths (agent.hcl, .agent/, its config, state and cache directories),
 * asked once from KernelCallbackService.ExecEnvironment: no write may reach them, even
 * through a link planted after the kernel checked the call. A kernel that does not serve
 * the call (UNIMPLEMENTED) owns none; any other failure refuses the write and is asked
 * again next time.
 */
function kernelOwnedPaths(kernel: KernelClient): () => Promise<readonly string[]> {
  let known: Promise<readonly string[]> | undefined;
  const ask = async (): Promise<readonly string[]> => {
    try {
      const k = await kernel.service();
      const r = await k.execEnvironment({ secretPatterns: [] }, { timeoutMs: 5_000 });
      return [...r.protectedPaths];
    } catch (err) {
      if ((err as { code?: unknown }).code === 12) return [];
      throw new ToolFailure(
        "execution_failed",
        `the kernel did not say which paths it owns, so nothing was written: ${(err as Error).message}`,
      );
    }
  };
  return () => {
    known ??= ask().catch((err: unknown) => {
      known = undefined;
      throw err;
    });
    return known;
  };
}

export async function configure(values: JsonObject, ctx: ConfigureContext): Promise<Diagnostic[]> {
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
  let jail: Jail;
  try {
    jail = await Jail.create(roots, {
      protectedPaths: kernelOwnedPaths(ctx.kernel),
      allowHardLinks: values["allow_hard_links"] === true,
      readRules: read.rules,
    });
  } catch (err) {
    return [configError(["roots"], "Invalid root", (err as Error).message)];
  }
  useSettings({ jail, maxReadBytes, maxFileBytes, maxImageBytes });
  // A multi-file change a crash cut short is rolled back before any call runs.
  const left = await recoverJournals(jail);
  return left.map((j) =>
    configWarning(
      ["roots"],
      "A half-applied change was left as it is",
      `${j.journal}: ${j.reason}; the journal is kept for a human to look at`,
    ),
  );
}
