// Kernel-owned files: agent.hcl, the project's .agent/ (lock file, ALWAYS store), the
// global config directory, and the agent's state and cache directories. No tool call
// may write them, whatever the policy says (issue: a model that can edit its own policy
// can grant itself anything). The kernel refuses plan items that name them (the gate, loop/gate/);
// the exec sandbox mounts them read-only for whatever a command does that no argument
// shows.

import { lstatSync, readlinkSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { isReadOnlyCommand } from "./builtin-rules.ts";
import { gitMetadataPaths } from "./git-paths.ts";
import { globalConfigPath } from "./global.ts";
import { parseCommand, type SimpleCommand } from "./shell.ts";

type Env = Readonly<Record<string, string | undefined>>;

function xdg(env: Env, name: string, fallback: string[]): string {
  const v = env[name];
  return v && isAbsolute(v) ? v : join(env["HOME"] || homedir(), ...fallback);
}

/**
 * The kernel-owned paths of a project, absolute; with `gitMetadata` (the default) also the
 * git metadata of its repository (git-paths.ts), which `settings.allow_git_metadata_writes`
 * turns off.
 */
export function kernelProtectedPaths(
  projectDir: string,
  env: Env = process.env,
  opts: { gitMetadata?: boolean } = {},
): string[] {
  const project = resolve(projectDir);
  return [
    join(project, "agent.hcl"),
    join(project, ".agent"),
    dirname(globalConfigPath(env as NodeJS.ProcessEnv)),
    join(xdg(env, "XDG_STATE_HOME", [".local", "state"]), "agent"),
    join(xdg(env, "XDG_CACHE_HOME", [".cache"]), "agent"),
    ...(opts.gitMetadata === false ? [] : gitMetadataPaths(project)),
  ];
}

function inside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Symbolic links followed while resolving one path before it counts as a loop (Linux's limit). */
const MAX_HOPS = 40;

export interface FollowedPath {
  /** Where the path leads: every existing symbolic link on it followed, dangling ones too. */
  readonly path: string;
  /** The links do not end (a cycle, or more than 40 of them): nobody can tell where it leads. */
  readonly loop: boolean;
}

/**
 * Where a write to `path` would land: each component is looked at in turn, a symbolic
 * link is replaced by its target (relative to the link's directory, `..` taken from the
 * directory actually reached, as the operating system does), including a link whose
 * target does not exist yet, a link to a link, and links in the directories on the way.
 * The first component that does not exist ends the walk; the rest is kept as written
 * (normalised), since nothing there can redirect yet. `path` must be absolute; a `..` in
 * it is also taken physically, so pass it unnormalised to judge what a shell would do.
 */
export function followLinksSync(path: string): FollowedPath {
  let pending = path.split(sep).filter((c) => c !== "" && c !== ".");
  let current: string = sep;
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, name);
    let link: string | undefined;
    try {
      const st = lstatSync(next);
      link = st.isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      // Absent (or not ours to look at): nothing below it can redirect a write yet.
      return { path: resolve(next, ...pending), loop: false };
    }
    if (link === undefined) {
      current = next;
      continue;
    }
    if (++hops > MAX_HOPS) return { path: resolve(next, ...pending), loop: true };
    pending = [...link.split(sep).filter((c) => c !== "" && c !== "."), ...pending];
    if (isAbsolute(link)) current = sep;
  }
  return { path: current, loop: false };
}

/**
 * Case and Unicode compatibility folded: on a case-insensitive file system (macOS, or a
 * mounted one) `AGENT.HCL` is agent.hcl, so names are compared folded everywhere. The
 * cost is that `Agent.hcl` is refused on Linux too, which nobody needs to write.
 */
function fold(path: string): string {
  return path.normalize("NFKC").toLowerCase();
}

/** The protected paths, each as written and as it resolves now, folded for comparison. */
export interface ProtectedSet {
  readonly entries: ReadonlyArray<{ readonly path: string; readonly forms: readonly string[] }>;
}

export function protectedSet(paths: readonly string[]): ProtectedSet {
  return {
    entries: paths.map((p) => {
      const followed = followLinksSync(resolve(p));
      return { path: p, forms: [...new Set([fold(resolve(p)), fold(followed.path)])] };
    }),
  };
}

/** A path that reaches a protected one, or cannot be resolved at all. */
export interface ProtectedMatch {
  readonly path: string;
  /** Refused because its links loop, not because it names a protected path. */
  readonly loop?: true;
}

function matchIn(set: ProtectedSet, candidates: readonly string[]): string | undefined {
  const folded = candidates.map(fold);
  for (const e of set.entries) {
    if (folded.some((c) => e.forms.some((f) => inside(c, f)))) return e.path;
  }
  return undefined;
}

/**
 * The protected path `value` (resolved against `cwd`) reaches, through links too. A value
 * is judged three ways, and any hit counts: as written (normalised), through its links the
 * way the file tools resolve it (normalised first, then links followed), and the way the
 * operating system does for a command (links followed, `..` after them). A chain of links
 * that does not end is a hit too: where it would lead cannot be known.
 */
export function protectedMatchOf(value: string, cwd: string, set: ProtectedSet): ProtectedMatch | undefined {
  if (value === "" || value.includes("\0")) return undefined;
  const expanded = value === "~" || value.startsWith("~/") ? join(homedir(), value.slice(1)) : value;
  const lexical = resolve(cwd, expanded);
  const raw = isAbsolute(expanded) ? expanded : `${cwd}${sep}${expanded}`;
  const viaTool = followLinksSync(lexical);
  const viaShell = raw === lexical ? viaTool : followLinksSync(raw);
  const hit = matchIn(set, [lexical, viaTool.path, viaShell.path]);
  if (hit) return { path: hit };
  if (viaTool.loop || viaShell.loop) return { path: value, loop: true };
  return undefined;
}

/** The protected path `value` (resolved against `cwd`) falls in, through links too. */
export function protectedPathOf(value: string, cwd: string, paths: readonly string[]): string | undefined {
  return protectedMatchOf(value, cwd, protectedSet(paths))?.path;
}

const PATH_KEY = /(path|file|dir|dest|target|src|source|from|^to$|output|location|root|cwd)/i;

/** Names and fragments whose mention in a command line counts as touching a protected path. */
function mentions(paths: readonly string[], home: string): RegExp {
  const fragments = new Set<string>([
    "agent.hcl",
    ".agent",
    ".config/agent",
    ".local/state/agent",
    ".cache/agent",
  ]);
  for (const p of paths) {
    fragments.add(p);
    if (p.startsWith(`${home}/`)) fragments.add(p.slice(home.length + 1));
  }
  const alt = [...fragments].map((f) => f.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&")).join("|");
  // Case-insensitive, as the comparison of paths is (fold).
  return new RegExp(`(^|[^A-Za-z0-9_-])(${alt})($|[^A-Za-z0-9_-])`, "i");
}

export interface ProtectedHit {
  /** The protected path (or fragment of one) the call touches; with `loop`, the value that loops. */
  readonly path: string;
  /** The argument it was found in. */
  readonly argument: string;
  /** Refused because the value is a chain of symbolic links that does not end. */
  readonly loop?: true;
}

function hitOf(m: ProtectedMatch | undefined, argument: string): ProtectedHit | undefined {
  if (!m) return undefined;
  return m.loop ? { path: m.path, argument, loop: true } : { path: m.path, argument };
}

/**
 * Whether a call would write a kernel-owned path, judged from its arguments: path-like
 * string arguments resolved against `cwd` (through symlinks), and for a `command`
 * argument every word and redirection target of every simple command, plus any mention
 * of a protected name in the text. A command that only reads (the built-in read-only
 * list, no redirection into a file) may name them.
 */
export function protectedHitOf(
  args: Readonly<Record<string, unknown>>,
  cwd: string,
  paths: readonly string[],
): ProtectedHit | undefined {
  const set = protectedSet(paths);
  const visit = (v: unknown, key: string, depth: number): ProtectedHit | undefined => {
    if (depth > 8) return undefined;
    if (typeof v === "string") {
      if (key === "command") return commandHit(v, cwd, paths, set);
      if (key === "patch") return patchHit(v, cwd, set);
      if (!PATH_KEY.test(key)) return undefined;
      return hitOf(protectedMatchOf(v, cwd, set), key);
    }
    if (Array.isArray(v)) {
      for (const x of v) {
        const h = visit(x, key, depth + 1);
        if (h) return h;
      }
      return undefined;
    }
    if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        const h = visit(x, PATH_KEY.test(key) && !PATH_KEY.test(k) ? key : k, depth + 1);
        if (h) return h;
      }
    }
    return undefined;
  };
  return visit(args, "", 0);
}

/**
 * The files a `patch` argument names: the file headers of the apply_patch format
 * (`*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`) and of unified
 * diffs (`--- a/x`, `+++ b/x`).
 */
export function patchPaths(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m =
      /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/.exec(line.trim()) ??
      /^(?:---|\+\+\+) (?:[ab]\/)?([^\t]+)/.exec(line);
    if (m && m[1]!.trim() !== "/dev/null") out.push(m[1]!.trim());
  }
  return out;
}

function patchHit(text: string, cwd: string, set: ProtectedSet): ProtectedHit | undefined {
  for (const f of patchPaths(text)) {
    const h = hitOf(protectedMatchOf(f, cwd, set), "patch");
    if (h) return h;
  }
  return undefined;
}

function commandHit(
  text: string,
  cwd: string,
  paths: readonly string[],
  set: ProtectedSet,
): ProtectedHit | undefined {
  const home = homedir();
  const re = mentions(paths, home);
  const parsed = parseCommand(text);
  const readOnly = (c: SimpleCommand) =>
    c.writes.length === 0 && c.assignments === 0 && isReadOnlyCommand(c.argv);
  if (!parsed.opaque) {
    for (const c of parsed.commands) {
      const words = [...c.argv, ...c.writes];
      for (const w of words) {
        if (w.dynamic) continue;
        // Every word may name a file: `cp x agent.hcl`, `ln -s .agent y`, `--output=.agent/z`.
        const candidates = [w.text, ...(w.text.includes("=") ? [w.text.slice(w.text.indexOf("=") + 1)] : [])];
        for (const cand of candidates) {
          const h = hitOf(protectedMatchOf(cand, cwd, set), "command");
          if (h && !(readOnly(c) && !c.writes.includes(w))) return h;
        }
      }
      if (!readOnly(c) && words.some((w) => re.test(w.text))) {
        const m = words.map((w) => re.exec(w.text)).find((x) => x);
        return { path: m?.[2] ?? "agent.hcl", argument: "command" };
      }
    }
    // Mentions the reader did not see as words (inside substitutions it skipped, etc.).
    const m = re.exec(text);
    if (m && !parsed.commands.every(readOnly)) return { path: m[2]!, argument: "command" };
    return undefined;
  }
  const m = re.exec(text);
  return m ? { path: m[2]!, argument: "command" } : undefined;
}
