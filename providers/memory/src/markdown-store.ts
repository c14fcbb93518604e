// Records as markdown files a person can read and edit: `<id>.md`, a front-matter block of
// `key: value` lines, then the content. Global and project records sit at the top of their
// root, session records in its `session/` subdirectory. The file name is the id and the
// directory the scope; a file written by hand with no front matter is a record too (type
// `user` in the global root, `project` elsewhere; title: its first heading, else the id).
// Files are read on every call, so an edit made between turns is what the next recall sees.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  isSlug,
  parseLinks,
  type ScopeName,
  type StoredRecord,
  slugify,
  TYPES,
  type TypeName,
} from "./record.ts";
import type { MemoryStore, Roots } from "./store.ts";

const MAX_FILE_BYTES = 256 * 1024;

function dirFor(roots: Roots, scope: ScopeName): string {
  if (scope === "global") return roots.global;
  return scope === "session" ? join(roots.project, "session") : roots.project;
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, " ").trim();

export function formatRecord(r: StoredRecord): string {
  const fm = [
    `title: ${oneLine(r.title)}`,
    `type: ${r.type}`,
    `status: ${r.status}`,
    `created: ${r.createdAt}`,
    `updated: ${r.updatedAt}`,
    `session: ${r.provenance.sourceSessionId}`,
    ...(r.provenance.sourceTurnId ? [`turn: ${r.provenance.sourceTurnId}`] : []),
    `recorded_by: ${r.provenance.recordedBy}`,
  ];
  return `---\n${fm.join("\n")}\n---\n\n${r.content.trimEnd()}\n`;
}

export function parseRecord(id: string, scope: ScopeName, text: string, mtime: Date): StoredRecord {
  const fields = new Map<string, string>();
  let body = text.replace(/^\uFEFF/, "");
  const fm = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(body);
  if (fm) {
    for (const line of fm[1]!.split(/\r?\n/)) {
      const m = /^([A-Za-z_]+)\s*:\s*(.*)$/.exec(line);
      if (m) fields.set(m[1]!.toLowerCase(), m[2]!.trim());
    }
    body = body.slice(fm[0].length);
  }
  const content = body.replace(/^\s*\n/, "").trimEnd();
  const type = fields.get("type") as TypeName | undefined;
  const heading = /^#+\s+(.+)$/m.exec(content)?.[1]?.trim();
  const when = mtime.toISOString();
  return {
    id,
    type:
      type && (TYPES as readonly string[]).includes(type) ? type : scope === "global" ? "user" : "project",
    scope,
    title: fields.get("title") || heading || id,
    content,
    status: fields.get("status") === "pending" ? "pending" : "canonical",
    links: parseLinks(content),
    createdAt: fields.get("created") || when,
    // A hand edit shows as a newer modification time than the front matter says.
    updatedAt: maxIso(fields.get("updated"), when),
    provenance: {
      sourceSessionId: fields.get("session") ?? "",
      ...(fields.get("turn") ? { sourceTurnId: fields.get("turn")! } : {}),
      recordedBy: fields.get("recorded_by") || "hand-edited",
    },
  };
}

function maxIso(a: string | undefined, b: string): string {
  if (!a || Number.isNaN(Date.parse(a))) return b;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

function readDir(dir: string, scope: ScopeName): StoredRecord[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: StoredRecord[] = [];
  for (const name of names.sort()) {
    if (!name.endsWith(".md")) continue;
    const id = slugify(name.slice(0, -3));
    if (!isSlug(id)) continue;
    const path = join(dir, name);
    try {
      const st = statSync(path);
      if (!st.isFile() || st.size > MAX_FILE_BYTES) continue;
      out.push(parseRecord(id, scope, readFileSync(path, "utf8"), st.mtime));
    } catch {
      // unreadable or vanished mid-listing: not a record this time
    }
  }
  return out;
}

export class MarkdownStore implements MemoryStore {
  list(roots: Roots): StoredRecord[] {
    const seen = new Set<string>();
    const out: StoredRecord[] = [];
    // The project's records shadow a global one of the same id.
    for (const [dir, scope] of [
      [join(roots.project, "session"), "session"],
      [roots.project, "project"],
      [roots.global, "global"],
    ] as const) {
      for (const r of readDir(dir, scope)) {
        if (seen.has(r.id)) continue;
        seen.add(r.id);
        out.push(r);
      }
    }
    return out;
  }

  get(roots: Roots, id: string): StoredRecord | undefined {
    return this.list(roots).find((r) => r.id === id);
  }

  /** The file that holds record `id` (a hand-made file may be named otherwise than its slug). */
  #fileOf(roots: Roots, id: string): string | undefined {
    for (const scope of ["session", "project", "global"] as const) {
      const dir = dirFor(roots, scope);
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      const name = names.find((n) => n.endsWith(".md") && slugify(n.slice(0, -3)) === id);
      if (name) return join(dir, name);
    }
    return undefined;
  }

  put(roots: Roots, r: StoredRecord): void {
    const dir = dirFor(roots, r.scope);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const existing = this.#fileOf(roots, r.id);
    const path = existing?.startsWith(`${dir}/`) ? existing : join(dir, `${r.id}.md`);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, formatRecord(r), { mode: 0o600 });
    renameSync(tmp, path);
  }

  remove(roots: Roots, id: string): boolean {
    const path = this.#fileOf(roots, id);
    if (!path) return false;
    rmSync(path, { force: true });
    return true;
  }

  close(): void {}
}
