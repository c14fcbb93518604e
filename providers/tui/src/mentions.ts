// `@path` mentions: Tab completes a path relative to the working directory (entries
// .gitignore excludes are not offered), and on Enter each mentioned file is attached to
// the message — text files as a block of their contents, images as image blocks (the
// kernel refuses those for a model without vision, as invalid_request). Attachments are
// bounded; binary files and the agent's own files (agent.hcl, .agent/, its state and
// global configuration) are refused with a message, and the message is not sent.
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import ignore, { type Ignore } from "ignore";

/** Per file. A bigger text file is refused (mention a smaller one, or let the model read it). */
export const MAX_TEXT_BYTES = 256 * 1024;
/** All attachments of one message together. */
export const MAX_TOTAL_BYTES = 1024 * 1024;
/** Images are sent inline; vendors cap them around 5 MB. */
/** Images are fitted to each model by the kernel, so this bounds only what the session keeps. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const MAX_CANDIDATES = 200;

export const IMAGE_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};

/** A mention token ends at whitespace; `@` must start the input or follow whitespace. */
const MENTION = /(^|\s)@((?:\\ |[^\s])+)/g;

export interface Mention {
  /** As typed, after the `@` (`\ ` unescaped). */
  readonly path: string;
  readonly start: number;
  readonly end: number;
}

export function mentionsIn(text: string): Mention[] {
  const out: Mention[] = [];
  for (const m of text.matchAll(MENTION)) {
    const start = m.index + m[1]!.length;
    out.push({ path: m[2]!.replace(/\\ /g, " "), start, end: start + 1 + m[2]!.length });
  }
  return out;
}

/** The mention the cursor is at the end of, if any. */
export function mentionAt(text: string, cursor: number): Mention | undefined {
  return mentionsIn(text.slice(0, cursor)).find((m) => m.end === cursor);
}

/** The .gitignore rules that apply under `root` down to `dir` (root's, then each level's). */
function ignoreFor(root: string, dir: string): Ignore {
  const ig = ignore().add(".git");
  const rel = relative(root, dir);
  const levels = [root];
  if (rel && !rel.startsWith("..")) {
    let at = root;
    for (const part of rel.split(sep)) {
      at = join(at, part);
      levels.push(at);
    }
  }
  for (const level of levels) {
    try {
      const text = readFileSync(join(level, ".gitignore"), "utf8");
      const prefix = relative(root, level);
      // Rules of a nested .gitignore are relative to its own directory.
      ig.add(
        text
          .split(/\r?\n/)
          .filter((l) => l.trim() !== "" && !l.startsWith("#"))
          .map((l) => {
            if (!prefix) return l;
            const neg = l.startsWith("!");
            const body = neg ? l.slice(1) : l;
            const anchored = body.startsWith("/") ? body.slice(1) : body.includes("/") ? body : `**/${body}`;
            return `${neg ? "!" : ""}${prefix.split(sep).join("/")}/${anchored}`;
          }),
      );
    } catch {
      // no .gitignore at this level
    }
  }
  return ig;
}

export interface Completion {
  /** The new input text and cursor. */
  readonly text: string;
  readonly cursor: number;
  /** When several entries match: what they are (shown to the operator). */
  readonly choices: readonly string[];
}

function commonPrefix(items: readonly string[]): string {
  if (items.length === 0) return "";
  let p = items[0]!;
  for (const s of items) while (!s.startsWith(p)) p = p.slice(0, -1);
  return p;
}

/** Tab at the end of an `@partial`: completes it as far as the matching entries agree. */
export function completeMention(text: string, cursor: number, cwd: string): Completion | undefined {
  const m = mentionAt(text, cursor);
  if (!m) return undefined;
  const typed = m.path;
  const slash = typed.lastIndexOf("/");
  const dirPart = slash >= 0 ? typed.slice(0, slash + 1) : "";
  const base = slash >= 0 ? typed.slice(slash + 1) : typed;
  const dir = resolve(cwd, dirPart || ".");
  let names: { name: string; isDir: boolean }[];
  try {
    names = readdirSync(dir, { withFileTypes: true }).map((d) => ({
      name: d.name,
      isDir: d.isDirectory() || (d.isSymbolicLink() && isDirectory(join(dir, d.name))),
    }));
  } catch {
    return { text, cursor, choices: [] };
  }
  const root = resolve(cwd);
  const inside = !relative(root, dir).startsWith("..");
  const ig = inside ? ignoreFor(root, dir) : undefined;
  const matches = names
    .filter((n) => n.name.startsWith(base))
    .filter((n) => base.startsWith(".") || !n.name.startsWith("."))
    .filter((n) => {
      if (!ig) return true;
      const rel = relative(root, join(dir, n.name)).split(sep).join("/");
      return !ig.ignores(n.isDir ? `${rel}/` : rel);
    })
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, MAX_CANDIDATES);
  if (matches.length === 0) return { text, cursor, choices: [] };
  const shown = matches.map((n) => `${n.name}${n.isDir ? "/" : ""}`);
  const completed = matches.length === 1 ? shown[0]! : commonPrefix(shown);
  const escaped = `${dirPart}${completed}`.replace(/ /g, "\\ ");
  const next = `${text.slice(0, m.start)}@${escaped}${text.slice(m.end)}`;
  const newCursor = m.start + 1 + escaped.length;
  return { text: next, cursor: newCursor, choices: matches.length === 1 ? [] : shown };
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

export type Attachment =
  | { readonly kind: "text"; readonly path: string; readonly text: string }
  | { readonly kind: "image"; readonly path: string; readonly mediaType: string; readonly data: Uint8Array };

export type AttachResult =
  | { readonly ok: true; readonly attachments: Attachment[] }
  | { readonly ok: false; readonly error: string };

function looksBinary(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, 8000);
  if (head.includes(0)) return true;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return false;
  } catch {
    return true;
  }
}

function within(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Reads every mentioned path that names a file. A mention of nothing that exists is left
 * as text (an email address, a decorator); one that names a directory, a binary file, a
 * file over the bounds or one of the agent's own files is an error naming it.
 */
export function readMentions(text: string, cwd: string, protectedPaths: readonly string[]): AttachResult {
  const attachments: Attachment[] = [];
  let total = 0;
  const seen = new Set<string>();
  for (const mention of mentionsIn(text)) {
    // "see @a.ts, then…": punctuation after a path is prose, unless the file has it.
    const found = [mention.path, mention.path.replace(/[,.;:!?)\]'"]+$/, "")]
      .map((path) => ({ path, st: statOr(resolve(cwd, path)) }))
      .find((c) => c.st !== undefined);
    if (!found) continue;
    const m = { path: found.path };
    const st = found.st!;
    const full = resolve(cwd, m.path);
    if (seen.has(full)) continue;
    seen.add(full);
    if (st.isDirectory()) return { ok: false, error: `@${m.path} is a directory; mention files` };
    // Symlinks resolved: a link to agent.hcl is agent.hcl.
    const real = realpathOr(full);
    if (protectedPaths.some((p) => within(full, resolve(p)) || within(real, realpathOr(resolve(p))))) {
      return {
        ok: false,
        error: `@${m.path} belongs to the agent itself (configuration, policy or state); it is not attached`,
      };
    }
    const mediaType = IMAGE_TYPES[extname(full).toLowerCase()];
    if (mediaType) {
      if (st.size > MAX_IMAGE_BYTES)
        return {
          ok: false,
          error: `@${m.path} is ${st.size} bytes; images are attached up to ${MAX_IMAGE_BYTES}`,
        };
      attachments.push({ kind: "image", path: m.path, mediaType, data: readFileSync(full) });
      continue;
    }
    if (st.size > MAX_TEXT_BYTES)
      return {
        ok: false,
        error: `@${m.path} is ${st.size} bytes; files are attached up to ${MAX_TEXT_BYTES} bytes`,
      };
    total += Number(st.size);
    if (total > MAX_TOTAL_BYTES)
      return { ok: false, error: `the mentioned files add up to more than ${MAX_TOTAL_BYTES} bytes` };
    const bytes = readFileSync(full);
    if (looksBinary(bytes))
      return {
        ok: false,
        error: `@${m.path} is a binary file; only text files and images (png, jpeg, gif, webp) can be attached`,
      };
    attachments.push({ kind: "text", path: m.path, text: new TextDecoder().decode(bytes) });
  }
  return { ok: true, attachments };
}

/** The attached text file as the model reads it, after the message. */
export function attachmentText(a: Extract<Attachment, { kind: "text" }>): string {
  return `<file path="${a.path}">\n${a.text}${a.text.endsWith("\n") ? "" : "\n"}</file>`;
}

/** Kernel-owned paths the UI refuses to attach when it is told none: the project's own. */
export function defaultProtectedPaths(cwd: string): string[] {
  return [join(cwd, "agent.hcl"), join(cwd, ".agent")];
}

function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function statOr(p: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}
