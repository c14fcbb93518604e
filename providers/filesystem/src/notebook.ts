// notebook_edit: replace, insert or delete one cell of a Jupyter notebook (.ipynb) as a
// structured edit. Everything else is kept as it was: the other cells byte for byte
// once re-serialised, the notebook's metadata, the key order, the file's indentation
// (nbformat writes one space) and its final newline. New cells follow nbformat 4: source
// as a list of lines, `metadata: {}`, code cells with `outputs: []` and
// `execution_count: null`, and an `id` when the notebook uses cell ids (nbformat >= 4.5).
import { randomBytes } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  defineTool,
  diffLines,
  formatUnified,
  type RenderNodeInit,
  r,
  s,
  type ToolContext,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { CHANGES_ONE_FILE } from "./change.ts";
import { fileLocks, readTextForChange, resolvePath, writeAtomically } from "./files.ts";

type CellType = "code" | "markdown" | "raw";

interface NotebookArgs {
  path: string;
  mode: "replace" | "insert" | "delete";
  cell_id?: string;
  index?: number;
  source?: string;
  cell_type?: CellType;
}

interface Cell {
  cell_type: string;
  id?: string;
  source?: string | string[];
  metadata?: JsonObject;
  outputs?: JsonValue[];
  execution_count?: number | null;
  [k: string]: JsonValue | undefined;
}

interface Notebook {
  cells: Cell[];
  nbformat?: number;
  nbformat_minor?: number;
  [k: string]: unknown;
}

interface Planned {
  file: Awaited<ReturnType<typeof resolvePath>>;
  before: string;
  after: string;
  mode: number;
  index: number;
  cellId: string | undefined;
  cellType: string;
  oldSource: string;
  newSource: string;
  total: number;
  title: string;
}

const sourceText = (c: Cell | undefined) =>
  c === undefined ? "" : Array.isArray(c.source) ? c.source.join("") : (c.source ?? "");

/** nbformat's multiline string: lines keeping their "\n", the last without. */
function sourceLines(text: string): string[] {
  if (text === "") return [];
  const parts = text.split("\n");
  const out = parts.slice(0, -1).map((l) => `${l}\n`);
  if (parts.at(-1) !== "") out.push(parts.at(-1)!);
  return out;
}

/** The indentation the file uses (nbformat: one space), and whether it ends with a newline. */
function styleOf(text: string): { indent: string | number; newline: boolean } {
  const m = /\n([ \t]+)"/.exec(text);
  return { indent: m ? m[1]! : text.includes("\n") ? 1 : 0, newline: text.endsWith("\n") };
}

function parseNotebook(path: string, text: string): Notebook {
  let nb: unknown;
  try {
    nb = JSON.parse(text);
  } catch (err) {
    throw new ToolFailure("invalid_arguments", `${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!nb || typeof nb !== "object" || !Array.isArray((nb as Notebook).cells))
    throw new ToolFailure("invalid_arguments", `${path} is not a Jupyter notebook (no "cells" list)`);
  const n = nb as Notebook;
  if (typeof n.nbformat === "number" && n.nbformat < 4)
    throw new ToolFailure(
      "invalid_arguments",
      `${path} is nbformat ${n.nbformat}; only nbformat 4 is supported`,
    );
  return n;
}

function findCell(nb: Notebook, args: NotebookArgs, path: string): number {
  if (args.cell_id !== undefined) {
    const i = nb.cells.findIndex((c) => c.id === args.cell_id);
    if (i === -1) {
      const ids = nb.cells.map((c) => c.id).filter((x) => x !== undefined);
      throw new ToolFailure(
        "not_found",
        `${path} has no cell with id ${JSON.stringify(args.cell_id)}${ids.length > 0 ? ` (ids: ${ids.slice(0, 20).join(", ")})` : "; its cells have no ids, use index"}`,
      );
    }
    return i;
  }
  if (args.index === undefined)
    throw new ToolFailure("invalid_arguments", `${args.mode} needs cell_id or index`);
  if (args.index < 0 || args.index >= nb.cells.length)
    throw new ToolFailure(
      "invalid_arguments",
      `index ${args.index} is out of range: ${path} has ${nb.cells.length} cells (0-${nb.cells.length - 1})`,
    );
  return args.index;
}

function newCell(nb: Notebook, type: CellType, source: string): Cell {
  const usesIds =
    nb.cells.some((c) => typeof c.id === "string") || (nb.nbformat === 4 && (nb.nbformat_minor ?? 0) >= 5);
  const taken = new Set(nb.cells.map((c) => c.id));
  let id = randomBytes(4).toString("hex");
  while (taken.has(id)) id = randomBytes(4).toString("hex");
  // Keys sorted, as nbformat writes them.
  return type === "code"
    ? {
        cell_type: "code",
        execution_count: null,
        ...(usesIds ? { id } : {}),
        metadata: {},
        outputs: [],
        source: sourceLines(source),
      }
    : { cell_type: type, ...(usesIds ? { id } : {}), metadata: {}, source: sourceLines(source) };
}

async function plan(args: NotebookArgs, ctx: Pick<ToolContext, "workingDirectory">): Promise<Planned> {
  if (!args.path.endsWith(".ipynb"))
    throw new ToolFailure("invalid_arguments", `${args.path} is not a .ipynb notebook; use edit_file`);
  const file = await resolvePath(args.path, ctx.workingDirectory);
  if (!file.exists) throw new ToolFailure("not_found", `${args.path} does not exist`);
  const existing = (await readTextForChange(file))!;
  const nb = parseNotebook(args.path, existing.text);
  const style = styleOf(existing.text);
  let index: number;
  let oldSource = "";
  let newSource = "";
  let cell: Cell | undefined;
  let title: string;
  if (args.mode === "delete") {
    index = findCell(nb, args, args.path);
    cell = nb.cells[index]!;
    oldSource = sourceText(cell);
    nb.cells.splice(index, 1);
    title = `Delete ${cell.cell_type} cell ${index}${cell.id ? ` (id ${cell.id})` : ""} of ${args.path}`;
  } else {
    if (args.source === undefined) throw new ToolFailure("invalid_arguments", `${args.mode} needs source`);
    newSource = args.source;
    if (args.mode === "replace") {
      index = findCell(nb, args, args.path);
      const old = nb.cells[index]!;
      oldSource = sourceText(old);
      const type = args.cell_type ?? (old.cell_type as CellType);
      if (type !== old.cell_type) {
        // A changed type is a new cell in the old one's place (same id): outputs go.
        cell = newCell(nb, type, newSource);
        if (old.id !== undefined) cell.id = old.id;
        if (old.metadata) cell.metadata = old.metadata;
      } else {
        cell = { ...old, source: sourceLines(newSource) };
        // Outputs of the old source would describe code that no longer exists.
        if (type === "code") {
          cell.outputs = [];
          cell.execution_count = null;
        }
      }
      nb.cells[index] = cell;
      title = `Replace ${old.cell_type === type ? type : `${old.cell_type} → ${type}`} cell ${index}${old.id ? ` (id ${old.id})` : ""} of ${args.path}`;
    } else {
      // insert: after cell_id, else at index, else at the end.
      index =
        args.cell_id !== undefined
          ? findCell(nb, args, args.path) + 1
          : args.index !== undefined
            ? args.index
            : nb.cells.length;
      if (index < 0 || index > nb.cells.length)
        throw new ToolFailure(
          "invalid_arguments",
          `index ${index} is out of range for an insert: ${args.path} has ${nb.cells.length} cells (0-${nb.cells.length})`,
        );
      cell = newCell(nb, args.cell_type ?? "code", newSource);
      nb.cells.splice(index, 0, cell);
      title = `Insert ${cell.cell_type} cell at ${index} of ${args.path}`;
    }
  }
  const after = JSON.stringify(nb, null, style.indent) + (style.newline ? "\n" : "");
  return {
    file,
    before: existing.text,
    after,
    mode: existing.mode,
    index,
    cellId: cell?.id,
    cellType: cell?.cell_type ?? "",
    oldSource,
    newSource,
    total: nb.cells.length,
    title,
  };
}

function sourceDiff(p: Planned) {
  const withNl = (t: string) => (t === "" || t.endsWith("\n") ? t : `${t}\n`);
  return diffLines(withNl(p.oldSource), withNl(p.newSource));
}

export const notebookEditTool = defineTool({
  name: "notebook_edit",
  kind: "resource",
  risk: "moderate",
  description:
    "Edit one Jupyter notebook cell, named by cell_id or 0-based index: replace its source, insert a new cell (after cell_id, at index, or at the end) or delete it.",
  input: s.object(
    {
      path: s.string(),
      mode: s.string(undefined, ["replace", "insert", "delete"]),
      cell_id: s.string(),
      index: s.integer(),
      source: s.string(),
      cell_type: s.string("Default: code.", ["code", "markdown", "raw"]),
    },
    ["path", "mode"],
  ),
  output: s.object(
    {
      path: s.string("The notebook as requested."),
      mode: s.string("What was done."),
      index: s.integer("Position of the cell (deleted: where it was)."),
      cell_id: s.string("The cell's id, when the notebook uses ids."),
      cell_type: s.string("The cell's type."),
      total_cells: s.integer("Cells in the notebook afterwards."),
      diff: s.string("Unified diff of the cell's source."),
    },
    ["path", "mode", "index", "cell_type", "total_cells", "diff"],
  ),
  ...CHANGES_ONE_FILE,
  idempotent: false,
  async invoke(args, ctx) {
    const first = await plan(args, ctx);
    return fileLocks.run(first.file.real, async () => {
      const p = await plan(args, ctx);
      await writeAtomically(p.file, p.after, p.mode);
      ctx.report({ path: args.path, written: true });
      return {
        path: args.path,
        mode: args.mode,
        index: p.index,
        ...(p.cellId !== undefined ? { cell_id: p.cellId } : {}),
        cell_type: p.cellType,
        total_cells: p.total,
        diff: formatUnified(`${p.file.relative || args.path}#cell${p.index}`, sourceDiff(p)),
      };
    });
  },
  async preview(args, ctx): Promise<RenderNodeInit> {
    const p = await plan(args, ctx);
    const hunks = sourceDiff(p);
    return r.group([r.text(p.title, "bold"), ...(hunks.length > 0 ? [r.diff(hunks)] : [])]);
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload;
    return r.text(`${p["mode"]} cell ${p["index"]} of ${p["path"]} (${p["total_cells"]} cells)`, "bold");
  },
});
