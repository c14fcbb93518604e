// apply_patch and edit_files: one change across several files (create, update, delete,
// move), applied all or nothing (transaction.ts). apply_patch takes the patch format
// OpenAI's models write (patch-format.ts); edit_files the same operations as structured
// JSON, with edit_file's exact-match edits. Preview and Invoke share one planner.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  defineTool,
  parseUnified,
  type RenderInput,
  type RenderNodeInit,
  r,
  s,
  type ToolContext,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { applyEdit, type Edit, MAX_RESULT_DIFF_CHARS } from "./change.ts";
import { readTextForChange, resolvePath } from "./files.ts";
import { applyChunks, parsePatch } from "./patch-format.ts";
import { settings } from "./settings.ts";
import {
  checkDistinct,
  commitChanges,
  type FileChange,
  previewChanges,
  statsOf,
  unifiedChange,
} from "./transaction.ts";

type Cwd = Pick<ToolContext, "workingDirectory">;

function checkSize(path: string, content: string): void {
  const max = settings().maxFileBytes;
  if (Buffer.byteLength(content) > max)
    throw new ToolFailure(
      "invalid_arguments",
      `the new content of ${path} is larger than the ${max}-byte limit`,
    );
}

async function existing(path: string, ctx: Cwd, mustExist: boolean) {
  const file = await resolvePath(path, ctx.workingDirectory);
  if (mustExist && !file.exists) throw new ToolFailure("not_found", `${path} does not exist`);
  const text = await readTextForChange(file);
  return { file, text };
}

/** A delete of `from` plus a write of `to` carrying `after`, from `from`'s content. */
async function moveChanges(
  from: string,
  to: string,
  after: string,
  ctx: Cwd,
  src: Awaited<ReturnType<typeof existing>>,
) {
  const dest = await existing(to, ctx, false);
  if (dest.file.real === src.file.real)
    throw new ToolFailure("invalid_arguments", `${from} cannot be moved onto itself`);
  checkSize(to, after);
  const changes: FileChange[] = [
    {
      path: to,
      file: dest.file,
      before: dest.text?.text,
      after,
      mode: src.text?.mode,
      movedFrom: from,
      diffBase: src.text!.text,
    },
    { path: from, file: src.file, before: src.text!.text, after: undefined, mode: undefined, movedTo: to },
  ];
  return changes;
}

async function planPatch(patch: string, ctx: Cwd): Promise<FileChange[]> {
  const ops = parsePatch(patch);
  const changes: FileChange[] = [];
  for (const op of ops) {
    if (op.kind === "add") {
      checkSize(op.path, op.content);
      const e = await existing(op.path, ctx, false);
      changes.push({
        path: op.path,
        file: e.file,
        before: e.text?.text,
        after: op.content,
        mode: e.text?.mode,
      });
    } else if (op.kind === "delete") {
      const e = await existing(op.path, ctx, true);
      changes.push({ path: op.path, file: e.file, before: e.text!.text, after: undefined, mode: undefined });
    } else {
      const e = await existing(op.path, ctx, true);
      const after = applyChunks(op.path, e.text!.text, op.chunks);
      if (op.moveTo !== undefined) changes.push(...(await moveChanges(op.path, op.moveTo, after, ctx, e)));
      else {
        checkSize(op.path, after);
        changes.push({ path: op.path, file: e.file, before: e.text!.text, after, mode: e.text!.mode });
      }
    }
  }
  checkDistinct(changes);
  return changes;
}

interface StructuredChange {
  path: string;
  action: "create" | "write" | "edit" | "delete" | "move";
  content?: string;
  edits?: Edit[];
  to?: string;
}

async function planStructured(list: readonly StructuredChange[], ctx: Cwd): Promise<FileChange[]> {
  if (list.length === 0) throw new ToolFailure("invalid_arguments", "changes must not be empty");
  const changes: FileChange[] = [];
  for (const [i, c] of list.entries()) {
    const label = `changes[${i}] (${c.action} ${c.path})`;
    const need = (what: string, v: unknown) => {
      if (v === undefined) throw new ToolFailure("invalid_arguments", `${label} needs ${what}`);
    };
    switch (c.action) {
      case "create":
      case "write": {
        need("content", c.content);
        checkSize(c.path, c.content!);
        const e = await existing(c.path, ctx, false);
        if (c.action === "create" && e.file.exists)
          throw new ToolFailure(
            "invalid_arguments",
            `${label}: ${c.path} already exists; use "write" to replace it`,
          );
        changes.push({
          path: c.path,
          file: e.file,
          before: e.text?.text,
          after: c.content!,
          mode: e.text?.mode,
        });
        break;
      }
      case "edit": {
        if (!c.edits || c.edits.length === 0)
          throw new ToolFailure("invalid_arguments", `${label} needs edits`);
        const e = await existing(c.path, ctx, true);
        let text = e.text!.text;
        c.edits.forEach((edit, k) => {
          text = applyEdit(text, edit, c.path, `${label}, edit ${k + 1}: `).text;
        });
        checkSize(c.path, text);
        changes.push({ path: c.path, file: e.file, before: e.text!.text, after: text, mode: e.text!.mode });
        break;
      }
      case "delete": {
        const e = await existing(c.path, ctx, true);
        changes.push({ path: c.path, file: e.file, before: e.text!.text, after: undefined, mode: undefined });
        break;
      }
      case "move": {
        need("to", c.to);
        const e = await existing(c.path, ctx, true);
        let text = e.text!.text;
        (c.edits ?? []).forEach((edit, k) => {
          text = applyEdit(text, edit, c.path, `${label}, edit ${k + 1}: `).text;
        });
        changes.push(...(await moveChanges(c.path, c.to!, text, ctx, e)));
        break;
      }
      default:
        throw new ToolFailure("invalid_arguments", `${label}: unknown action`);
    }
  }
  checkDistinct(changes);
  return changes;
}

function resultOf(changes: readonly FileChange[], ctx: ToolContext): JsonObject {
  const files = changes
    .filter((c) => c.movedTo === undefined)
    .map((c) => {
      const { additions, deletions } = statsOf(c);
      const action =
        c.movedFrom !== undefined
          ? "moved"
          : c.after === undefined
            ? "deleted"
            : c.before === undefined
              ? "created"
              : "updated";
      return {
        path: c.path,
        action,
        ...(c.movedFrom !== undefined ? { from: c.movedFrom } : {}),
        additions,
        deletions,
      };
    });
  let diff = unifiedChange(changes);
  let truncated = false;
  if (diff.length > MAX_RESULT_DIFF_CHARS) {
    const cut = diff.lastIndexOf("\n", MAX_RESULT_DIFF_CHARS);
    diff = diff.slice(0, cut > 0 ? cut + 1 : MAX_RESULT_DIFF_CHARS);
    truncated = true;
  }
  ctx.report({ files_changed: files.length });
  const summary = files
    .map(
      (f) =>
        `${f.action} ${f.from !== undefined ? `${f.from} -> ` : ""}${f.path} (+${f.additions} -${f.deletions})`,
    )
    .join("\n");
  return {
    files,
    summary,
    diff,
    ...(truncated ? { diff_truncated: true } : {}),
  };
}

const resultSchema = s.object(
  {
    files: s.array(
      s.object(
        {
          path: s.string("The file as named in the change (the new name of a move)."),
          action: s.string("What happened to it.", ["created", "updated", "deleted", "moved"]),
          from: s.string("The old name of a moved file."),
          additions: s.integer("Lines added."),
          deletions: s.integer("Lines removed."),
        },
        ["path", "action", "additions", "deletions"],
      ),
      "Every file the change touched.",
    ),
    summary: s.string("One line per file: action, path, line counts."),
    diff: s.string("Unified diff of the whole change (cut at 16 KiB, see diff_truncated)."),
    diff_truncated: s.boolean("The diff is cut short; the change itself was made whole."),
  },
  ["files", "summary", "diff"],
);

function renderResult(input: RenderInput, title: string): RenderNodeInit | undefined {
  if (input.kind !== "tool_result" || !input.payload) return undefined;
  const p = input.payload;
  const files = (p["files"] ?? []) as { path: string; action: string }[];
  const hunks = parseUnified(String(p["diff"] ?? ""));
  return r.group([
    r.text(`${title}: ${files.length} file${files.length === 1 ? "" : "s"}`, "bold"),
    r.text(String(p["summary"] ?? "")),
    ...(hunks.length > 0 ? [r.diff(hunks)] : []),
  ]);
}

export const applyPatchTool = defineTool({
  name: "apply_patch",
  kind: "resource",
  risk: "moderate",
  description: [
    "Create, update, delete or rename several files in one all-or-nothing change. Format:",
    "*** Begin Patch",
    "*** Add File: <path>   (then the file's lines, each prefixed +)",
    "*** Delete File: <path>",
    "*** Update File: <path>",
    "*** Move to: <path>    (optional rename)",
    "@@ <optional line to find first>",
    " context line (about 3 before and after each change)",
    "-removed line",
    "+added line",
    "*** End Patch",
  ].join("\n"),
  input: s.object({ patch: s.string() }, ["patch"]),
  output: resultSchema,
  streaming: false,
  // The files a patch touches are inside its text, which the kernel cannot key on: the
  // kernel serialises identical patches, and the plugin serialises every file of a change
  // (all its locks, in sorted order) against every other change of those files.
  concurrency: { safe: true, keyFields: ["patch"] },
  defaultTimeoutMs: 60_000,
  idempotent: false,
  modelText: { field: "summary" },
  async invoke(args, ctx) {
    return resultOf(await commitChanges(() => planPatch(args.patch, ctx)), ctx);
  },
  async preview(args, ctx) {
    return previewChanges(await planPatch(args.patch, ctx));
  },
  render: (input) => renderResult(input, "Patched"),
});

const editSchema = s.object(
  {
    old_str: s.string(),
    new_str: s.string(),
    replace_all: s.boolean(),
  },
  ["old_str", "new_str"],
);

export const editFilesTool = defineTool({
  name: "edit_files",
  kind: "resource",
  risk: "moderate",
  description:
    "Change several files at once, all or nothing. Each change has a path and an action: create or write (content), edit (edits as in edit_file), delete, or move (to, optional edits).",
  input: s.object(
    {
      changes: s.array(
        s.object(
          {
            path: s.string(),
            action: s.string(undefined, ["create", "write", "edit", "delete", "move"]),
            content: s.string(),
            edits: s.array(editSchema),
            to: s.string(),
          },
          ["path", "action"],
        ),
      ),
    },
    ["changes"],
  ),
  output: resultSchema,
  streaming: false,
  concurrency: { safe: true, keyFields: ["changes"] },
  defaultTimeoutMs: 60_000,
  idempotent: false,
  modelText: { field: "summary" },
  async invoke(args, ctx) {
    return resultOf(await commitChanges(() => planStructured(args.changes, ctx)), ctx);
  },
  async preview(args, ctx) {
    return previewChanges(await planStructured(args.changes, ctx));
  },
  render: (input) => renderResult(input, "Edited"),
});
