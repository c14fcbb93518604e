// list_directory: the entries of one directory, without following symbolic links.
import { lstat, readdir } from "node:fs/promises";
import { type DirHandle, defineTool, r, s, ToolFailure } from "@pluggableharness/tool-kit";
import { guard, resolvePath } from "./files.ts";
import { settings } from "./settings.ts";

const MAX_ENTRIES = 1000;

type EntryType = "file" | "directory" | "symlink" | "other";

function listingLine(e: { name: string; type: EntryType; size: number }): string {
  switch (e.type) {
    case "directory":
      return `${e.name}/`;
    case "file":
      return `${e.name} (${e.size} bytes)`;
    case "symlink":
      return `${e.name}@`;
    default:
      return e.name;
  }
}

export const listDirectoryTool = defineTool({
  name: "list_directory",
  kind: "data_source",
  risk: "read_only",
  description: "List a directory's entries (name, type, size), directories first.",
  input: s.object({ path: s.string() }),
  output: s.object(
    {
      path: s.string("The directory as requested."),
      entries: s.array(
        s.object(
          {
            name: s.string(),
            type: s.string("Entry type.", ["file", "directory", "symlink", "other"]),
            size: s.integer("Size in bytes (files only; 0 otherwise)."),
          },
          ["name", "type", "size"],
        ),
      ),
      total: s.integer("Entries in the directory."),
      truncated: s.boolean("More entries exist than were returned."),
      listing: s.string(
        "One entry per line: 'name/' for a directory, 'name (N bytes)' for a file, 'name@' for a link.",
      ),
    },
    ["path", "entries", "total", "truncated", "listing"],
  ),
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 30_000,
  idempotent: true,
  // The model reads the listing; the entries stay in the payload for frontends.
  modelText: { field: "listing", omit: ["entries"] },
  async invoke(args, ctx) {
    const path = args.path ?? ".";
    const dir = await resolvePath(path, ctx.workingDirectory);
    if (!dir.exists) throw new ToolFailure("not_found", `${path} does not exist`);
    return guard(path, async () => {
      const st = await lstat(dir.real);
      if (!st.isDirectory())
        throw new ToolFailure("invalid_arguments", `${path} is not a directory; use read_file`);
      // Listed through a descriptor checked to be the resolved directory: a link swapped in
      // on its path since cannot show another directory's names.
      const opened = await settings().jail.openDirectory(dir.real, path);
      try {
        return await listOpened(opened, path);
      } finally {
        await opened.close();
      }
    });
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload;
    const entries = (p["entries"] ?? []) as { name: string; type: string; size: number }[];
    return r.collapsible(`${p["path"]} (${p["total"]} entries)`, [
      r.table(
        ["name", "type", "size"],
        entries.map((e) => [e.type === "directory" ? `${e.name}/` : e.name, e.type, String(e.size)]),
      ),
    ]);
  },
});

async function listOpened(dir: DirHandle, path: string) {
  const dirents = await readdir(dir.self, { withFileTypes: true });
  const typed = dirents.map((d) => ({
    name: d.name,
    type: (d.isDirectory()
      ? "directory"
      : d.isFile()
        ? "file"
        : d.isSymbolicLink()
          ? "symlink"
          : "other") as EntryType,
  }));
  typed.sort((a, b) =>
    a.type === "directory" && b.type !== "directory"
      ? -1
      : b.type === "directory" && a.type !== "directory"
        ? 1
        : a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : 0,
  );
  const shown = typed.slice(0, MAX_ENTRIES);
  const entries = await Promise.all(
    shown.map(async (e) => ({
      ...e,
      size: e.type === "file" ? (await lstat(dir.at(e.name)).catch(() => ({ size: 0 }))).size : 0,
    })),
  );
  return {
    path,
    entries,
    total: typed.length,
    truncated: typed.length > shown.length,
    listing: entries.map(listingLine).join("\n"),
  };
}
