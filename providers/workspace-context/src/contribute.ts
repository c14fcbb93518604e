// Contribute: up to three dynamic sections, appended to the chain received — "Git state",
// "Files touched this session" (from ContextRequest.files_touched, which the kernel fills
// from the session's tool calls) and "File tree". All three share this provider's
// token_budget, filled in that order of priority: a section that does not fit whole is cut
// at a line boundary (counted through the kernel's CountTokens) and marked truncated;
// what has no room left is left out. The chain lists them git, touched, tree.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import { type ContextSectionSchema, Stability } from "@pluggableharness/protocol/content";
import type { ContextRequest } from "@pluggableharness/protocol/context";
import type { SandboxMode } from "@pluggableharness/runtime/sandbox";
import { fitLines, tokenCounter } from "@pluggableharness/tool-kit";
import { type GitRun, gitRoot, gitState } from "./git.ts";
import { fileTree } from "./tree.ts";

export const PROVIDER = "workspace-context";
/** Below this many tokens of room a section is left out rather than cut to a stub. */
const MIN_USEFUL_TOKENS = 24;

export interface Options {
  readonly git: boolean;
  /** The sandbox git runs in (runtime/sandbox.ts modes). */
  readonly sandbox: SandboxMode;
  readonly recentCommits: number;
  readonly maxStatusEntries: number;
  readonly fileTree: boolean;
  readonly treeMaxEntries: number;
  readonly treeMaxDepth: number;
  readonly filesTouched: boolean;
  readonly maxFilesTouched: number;
  readonly defaultBudget: number;
}

type Section = MessageInitShape<typeof ContextSectionSchema>;

let warned = false;

/** The kernel's log hears once per process that git does not run as configured. */
function warnOnce(kernel: KernelClient, message: string): void {
  if (warned) return;
  warned = true;
  void kernel.log("warn", message).catch(() => {});
}

export async function contribute(req: ContextRequest, kernel: KernelClient, o: Options): Promise<Section[]> {
  const budget = req.tokenBudget > 0n ? Number(req.tokenBudget) : o.defaultBudget;
  const cwd = req.workingDirectory;
  const candidates: { label: string; text: string }[] = [];
  const run: GitRun = { sandbox: o.sandbox, warn: (message) => warnOnce(kernel, message) };
  const root = cwd ? await gitRoot(cwd, run) : undefined;
  // git's two commands and the tree walk run side by side: this runs before every model call.
  const [git, tree] = await Promise.all([
    cwd && root && o.git ? gitState(cwd, root, o, run) : undefined,
    cwd && o.fileTree
      ? fileTree(cwd, { maxEntries: o.treeMaxEntries, maxDepth: o.treeMaxDepth, maxPerDirectory: 40 }, root)
      : undefined,
  ]);
  if (git) candidates.push({ label: "Git state", text: git.text });
  if (o.filesTouched && req.filesTouched.length > 0) {
    const recent = req.filesTouched.slice(-o.maxFilesTouched);
    const older = req.filesTouched.length - recent.length;
    const lines = [
      "Files this session's tool calls have named, most recent last:",
      ...recent.map((f) => `  ${f}`),
    ];
    if (older > 0) lines.splice(1, 0, `  (${older} earlier ones not listed)`);
    candidates.push({ label: "Files touched this session", text: lines.join("\n") });
  }
  if (tree !== undefined) candidates.push({ label: "File tree", text: `${cwd}\n${tree}` });
  const count = tokenCounter(kernel, req.modelTarget);
  const out: Section[] = [];
  let used = 0;
  for (const c of candidates) {
    const room = budget - used;
    if (room < MIN_USEFUL_TOKENS) break;
    const tokens = await count(c.text);
    let text = c.text;
    let n = tokens;
    let truncated = false;
    if (tokens > room) {
      const cut = await fitLines(c.text, room, count);
      if (!cut) continue;
      ({ text, tokens: n } = cut);
      truncated = true;
    }
    used += n;
    out.push({
      provider: PROVIDER,
      label: c.label,
      content: [{ block: { case: "text", value: { text } } }],
      tokens: BigInt(n),
      stability: Stability.DYNAMIC,
      truncated,
    });
  }
  return out;
}
