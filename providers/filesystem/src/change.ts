// The change operations: write_file, edit_file and multi_edit. Each one computes the
// new content in memory (which is all Preview does), then, under the file's lock,
// writes it atomically. Preview and Invoke share the computation, so the diff a human
// approves is the diff that is applied, provided the file did not change in between.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  defineTool,
  diffLines,
  formatUnified,
  type Hunk,
  parseUnified,
  type RenderInput,
  type RenderNodeInit,
  type ResolvedPath,
  r,
  s,
  type ToolContext,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { fileLocks, readTextForChange, resolvePath, writeAtomically } from "./files.ts";
import { settings } from "./settings.ts";

interface Planned {
  file: ResolvedPath;
  before: string | undefined;
  after: string;
  mode: number | undefined;
  replacements: number;
}

export interface Edit {
  old_str: string;
  new_str: string;
  replace_all?: boolean;
}

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** Applies one exact-match replacement; `label` names the edit in messages. */
export function applyEdit(
  text: string,
  edit: Edit,
  path: string,
  label: string,
): { text: string; count: number } {
  if (edit.old_str === "") throw new ToolFailure("invalid_arguments", `${label}old_str must not be empty`);
  if (edit.old_str === edit.new_str) {
    throw new ToolFailure(
      "invalid_arguments",
      `${label}old_str and new_str are identical; nothing would change`,
    );
  }
  const count = countOccurrences(text, edit.old_str);
  if (count === 0) {
    throw new ToolFailure(
      "not_found",
      `${label}old_str was not found in ${path}; it must match the file exactly, whitespace included`,
    );
  }
  if (count > 1 && !edit.replace_all) {
    throw new ToolFailure(
      "invalid_arguments",
      `${label}old_str matches ${count} places in ${path}; add surrounding lines to make it unique, or set replace_all`,
      { details: { matches: count } },
    );
  }
  if (edit.replace_all) return { text: text.split(edit.old_str).join(edit.new_str), count };
  const at = text.indexOf(edit.old_str);
  return { text: text.slice(0, at) + edit.new_str + text.slice(at + edit.old_str.length), count: 1 };
}

async function planEdits(
  path: string,
  edits: readonly Edit[],
  ctx: Pick<ToolContext, "workingDirectory">,
): Promise<Planned> {
  const file = await resolvePath(path, ctx.workingDirectory);
  if (!file.exists) throw new ToolFailure("not_found", `${path} does not exist`);
  const existing = await readTextForChange(file);
  const before = existing!.text;
  let text = before;
  let replacements = 0;
  edits.forEach((edit, i) => {
    const label = edits.length > 1 ? `edit ${i + 1} of ${edits.length}: ` : "";
    const applied = applyEdit(text, edit, path, label);
    text = applied.text;
    replacements += applied.count;
  });
  return { file, before, after: text, mode: existing!.mode, replacements };
}

async function planWrite(
  path: string,
  content: string,
  ctx: Pick<ToolContext, "workingDirectory">,
): Promise<Planned> {
  const max = settings().maxFileBytes;
  if (Buffer.byteLength(content) > max) {
    throw new ToolFailure("invalid_arguments", `content is larger than the ${max}-byte limit`);
  }
  const file = await resolvePath(path, ctx.workingDirectory);
  const existing = await readTextForChange(file);
  return { file, before: existing?.text, after: content, mode: existing?.mode, replacements: 0 };
}

function summaryOf(plan: Planned): { hunks: Hunk[]; additions: number; deletions: number } {
  const hunks = diffLines(plan.before ?? "", plan.after);
  let additions = 0;
  let deletions = 0;
  for (const h of hunks) {
    for (const l of h.lines) {
      if (l.op === "add") additions++;
      else if (l.op === "remove") deletions++;
    }
  }
  return { hunks, additions, deletions };
}

function previewOf(verb: string, plan: Planned): RenderNodeInit {
  const { hunks, additions, deletions } = summaryOf(plan);
  if (hunks.length === 0) return r.text(`${plan.file.requested}: no change`, "dim");
  return r.group([
    r.text(`${verb} ${plan.file.requested} (+${additions} -${deletions})`, "bold"),
    r.diff(hunks),
  ]);
}

/** Writes a plan under the file's lock, re-planning there so concurrent changes compose. */
async function commit(
  path: string,
  replan: () => Promise<Planned>,
  ctx: ToolContext,
): Promise<{ plan: Planned; payload: JsonObject }> {
  const first = await replan();
  return fileLocks.run(first.file.real, async () => {
    const plan = await replan();
    if (plan.before !== plan.after) await writeAtomically(plan.file, plan.after, plan.mode);
    ctx.report({ path, written: true });
    const { hunks, additions, deletions } = summaryOf(plan);
    const diff = formatUnified(plan.file.relative || path, hunks);
    return {
      plan,
      payload: { path, ...resultDiff(diff), additions, deletions },
    };
  });
}

/**
 * The diff a result carries (the model reads it, and it is stored with the result). The
 * model wrote the change itself, so a huge diff (a 10 MB new file) would only repeat its
 * own input: past MAX_RESULT_DIFF_CHARS it is cut at a line end and marked truncated.
 */
export const MAX_RESULT_DIFF_CHARS = 16 * 1024;

function resultDiff(diff: string): { diff: string; diff_truncated?: boolean } {
  if (diff.length <= MAX_RESULT_DIFF_CHARS) return { diff };
  const cut = diff.lastIndexOf("\n", MAX_RESULT_DIFF_CHARS);
  return { diff: diff.slice(0, cut > 0 ? cut + 1 : MAX_RESULT_DIFF_CHARS), diff_truncated: true };
}

function renderChange(input: RenderInput, verb: string): RenderNodeInit | undefined {
  if (input.kind !== "tool_result" || !input.payload) return undefined;
  const p = input.payload;
  const hunks = parseUnified(String(p["diff"] ?? ""));
  const title = r.text(`${verb} ${p["path"]} (+${p["additions"]} -${p["deletions"]})`, "bold");
  return hunks.length > 0 ? r.group([title, r.diff(hunks)]) : r.group([title, r.text("no change", "dim")]);
}

/**
 * What every tool that changes one file declares: no streaming, calls on different paths
 * run together (one path at a time), 30 s, and the diff is what the model reads.
 */
export const CHANGES_ONE_FILE = {
  streaming: false,
  concurrency: { safe: true, keyFields: ["path"] },
  defaultTimeoutMs: 30_000,
  modelText: { field: "diff" },
  // The one file `path` names is all a call changes (a write goes to a temporary file
  // beside it, renamed over it): the kernel's checkpoint looks at it alone.
  writtenPathFields: ["path"],
} as const;

const changeOutput = {
  path: s.string("The path as requested."),
  diff: s.string("Unified diff of the change; empty when the content did not change."),
  diff_truncated: s.boolean(
    "The diff was longer than 16 KiB and is cut short (the change itself was made whole).",
  ),
  additions: s.integer("Lines added."),
  deletions: s.integer("Lines removed."),
};

const editFields = {
  old_str: s.string(),
  new_str: s.string(),
  replace_all: s.boolean(),
};

export const writeFileTool = defineTool({
  name: "write_file",
  kind: "resource",
  risk: "moderate",
  description:
    "Create or overwrite a whole file (parent directories are created). Use edit_file to change part of a file.",
  input: s.object(
    {
      path: s.string(),
      content: s.string(),
    },
    ["path", "content"],
  ),
  output: s.object(
    {
      ...changeOutput,
      created: s.boolean("The file did not exist before."),
      bytes_written: s.integer("Size of the new content in bytes."),
    },
    ["path", "diff", "additions", "deletions", "created", "bytes_written"],
  ),
  ...CHANGES_ONE_FILE,
  idempotent: true,
  async invoke(args, ctx) {
    const { plan, payload } = await commit(args.path, () => planWrite(args.path, args.content, ctx), ctx);
    return { ...payload, created: plan.before === undefined, bytes_written: Buffer.byteLength(args.content) };
  },
  async preview(args, ctx) {
    const plan = await planWrite(args.path, args.content, ctx);
    return previewOf(plan.before === undefined ? "Create" : "Overwrite", plan);
  },
  render: (input) => renderChange(input, "Wrote"),
});

export const editFileTool = defineTool({
  name: "edit_file",
  kind: "resource",
  risk: "moderate",
  description:
    "Replace exact text in a file. old_str must match exactly, whitespace included, and occur once unless replace_all; otherwise nothing changes.",
  input: s.object({ path: s.string(), ...editFields }, ["path", "old_str", "new_str"]),
  output: s.object({ ...changeOutput, replacements: s.integer("Occurrences replaced.") }, [
    "path",
    "diff",
    "additions",
    "deletions",
    "replacements",
  ]),
  ...CHANGES_ONE_FILE,
  idempotent: false,
  async invoke(args, ctx) {
    const { plan, payload } = await commit(args.path, () => planEdits(args.path, [args], ctx), ctx);
    return { ...payload, replacements: plan.replacements };
  },
  async preview(args, ctx) {
    return previewOf("Edit", await planEdits(args.path, [args], ctx));
  },
  render: (input) => renderChange(input, "Edited"),
});

export const multiEditTool = defineTool({
  name: "multi_edit",
  kind: "resource",
  risk: "moderate",
  description: "Apply several edit_file replacements to one file in order, all or nothing.",
  input: s.object(
    {
      path: s.string(),
      edits: s.array(s.object(editFields, ["old_str", "new_str"])),
    },
    ["path", "edits"],
  ),
  output: s.object(
    {
      ...changeOutput,
      replacements: s.integer("Occurrences replaced by all edits together."),
      edits_applied: s.integer("Number of edits applied."),
    },
    ["path", "diff", "additions", "deletions", "replacements", "edits_applied"],
  ),
  ...CHANGES_ONE_FILE,
  idempotent: false,
  async invoke(args, ctx) {
    if (args.edits.length === 0) throw new ToolFailure("invalid_arguments", "edits must not be empty");
    const { plan, payload } = await commit(args.path, () => planEdits(args.path, args.edits, ctx), ctx);
    return { ...payload, replacements: plan.replacements, edits_applied: args.edits.length };
  },
  async preview(args, ctx) {
    if (args.edits.length === 0) throw new ToolFailure("invalid_arguments", "edits must not be empty");
    return previewOf("Edit", await planEdits(args.path, args.edits, ctx));
  },
  render: (input) => renderChange(input, "Edited"),
});
