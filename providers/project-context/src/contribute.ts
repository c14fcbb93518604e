// Contribute: the base instructions and the convention files as this provider's own
// sections, appended to the chain it received, all within token_budget. Tokens are
// counted by the kernel (CountTokens). When the sources do not fit, the base
// instructions come first, then files nearest the working directory; the one that
// crosses the budget is cut at a line boundary and marked truncated; the rest are
// left out. Sections appear in reading order: base, repository root, ..., nearest.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import { type ContextSectionSchema, Stability } from "@pluggableharness/protocol/content";
import type { ContextRequest } from "@pluggableharness/protocol/context";
import { fitLines, tokenCounter } from "@pluggableharness/tool-kit";
import { BASE_INSTRUCTIONS } from "./instructions.ts";
import { conventionFiles, readSource, touchedConventionFiles } from "./sources.ts";

export const PROVIDER = "project-context";
const TRUNCATION_NOTE = "\n\n[truncated to fit the context budget]";
/** Below this many tokens of room, a source is left out rather than cut to a stub. */
const MIN_USEFUL_TOKENS = 32;

export interface Options {
  baseInstructions: boolean;
  extraInstructions: string;
  fileNames: readonly string[];
  extraFiles: readonly string[];
  defaultBudget: number;
}

interface Candidate {
  label: string;
  text: string;
  /** Lower goes in first when the budget is short. */
  priority: number;
  /** Reading order in the chain. */
  order: number;
}

export async function contribute(
  req: ContextRequest,
  kernel: KernelClient,
  options: Options,
): Promise<MessageInitShape<typeof ContextSectionSchema>[]> {
  const budget = req.tokenBudget > 0n ? Number(req.tokenBudget) : options.defaultBudget;
  const candidates: Candidate[] = [];
  if (options.baseInstructions || options.extraInstructions) {
    const text = [options.baseInstructions ? BASE_INSTRUCTIONS : "", options.extraInstructions]
      .filter(Boolean)
      .join("\n\n");
    candidates.push({ label: "Base instructions", text, priority: 0, order: 0 });
  }
  if (req.workingDirectory) {
    const files = await conventionFiles(req.workingDirectory, options.fileNames);
    for (const [i, f] of files.entries()) {
      const text = await readSource(f.path);
      if (text) candidates.push({ label: f.label, text, priority: 1 + f.depth, order: 1 + i });
    }
    // Just in time: the rules of the directories the session has touched files in, after
    // the working directory's own (and before extra_files).
    const known = new Set(files.map((f) => f.path));
    const touched = await touchedConventionFiles(
      req.workingDirectory,
      req.filesTouched,
      options.fileNames,
      known,
    );
    for (const [i, f] of touched.entries()) {
      const text = await readSource(f.path);
      if (text) candidates.push({ label: f.label, text, priority: 500 + i, order: 500 + i });
    }
  }
  for (const [i, path] of options.extraFiles.entries()) {
    const text = await readSource(path);
    if (text) candidates.push({ label: path, text, priority: 1000 + i, order: 1000 + i });
  }

  // Exact counts are cached per model in tool-kit: the same files come back every turn.
  const count = tokenCounter(kernel, req.modelTarget);
  const chosen: { c: Candidate; text: string; tokens: number; truncated: boolean }[] = [];
  let used = 0;
  for (const c of [...candidates].sort((a, b) => a.priority - b.priority)) {
    const room = budget - used;
    if (room < MIN_USEFUL_TOKENS) break;
    const tokens = await count(c.text);
    if (tokens <= room) {
      chosen.push({ c, text: c.text, tokens, truncated: false });
      used += tokens;
      continue;
    }
    const cut = await fitLines(c.text, room, count, TRUNCATION_NOTE);
    if (cut) {
      chosen.push({ c, text: cut.text, tokens: cut.tokens, truncated: true });
      used += cut.tokens;
    }
    break;
  }
  return chosen
    .sort((a, b) => a.c.order - b.c.order)
    .map((x) => ({
      provider: PROVIDER,
      label: x.c.label,
      content: [{ block: { case: "text" as const, value: { text: x.text } } }],
      tokens: BigInt(x.tokens),
      stability: Stability.STATIC,
      truncated: x.truncated,
    }));
}
