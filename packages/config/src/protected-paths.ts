// Kernel-owned files: agent.hcl, the project's .agent/ (lock file, ALWAYS store), the
// global config directory, and the agent's state and cache directories. No tool call
// may write them, whatever the policy says (issue: a model that can edit its own policy
// can grant itself anything). The kernel refuses plan items that name them (the gate, loop/gate/);
// the exec sandbox mounts them read-only for whatever a command does that no argument
// shows.

import { existsSync, realpathSync } from "node:fs";
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

/** The path with every symlink in its longest existing prefix resolved. */
function realish(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (let i = 0; i < 256; i++) {
    if (existsSync(head)) {
      try {
        return join(realpathSync(head), ...tail.reverse());
      } catch {
        return path;
      }
    }
    const parent = dirname(head);
    if (parent === head) return path;
    tail.push(head.slice(parent.length).replace(/^\/+/, ""));
    head = parent;
  }
  return path;
}

/** The protected path `value` (resolved against `cwd`) falls in, through links too. */
export function protectedPathOf(value: string, cwd: string, paths: readonly string[]): string | undefined {
  if (value === "" || value.includes("\0")) return undefined;
  const expanded = value === "~" || value.startsWith("~/") ? join(homedir(), value.slice(1)) : value;
  const lexical = resolve(cwd, expanded);
  const real = realish(lexical);
  for (const p of paths) {
    const realP = realish(p);
    if (inside(lexical, p) || inside(real, p) || inside(lexical, realP) || inside(real, realP)) return p;
  }
  return undefined;
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
  return new RegExp(`(^|[^A-Za-z0-9_-])(${alt})($|[^A-Za-z0-9_-])`);
}

export interface ProtectedHit {
  /** The protected path (or fragment of one) the call touches. */
  readonly path: string;
  /** The argument it was found in. */
  readonly argument: string;
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
  const visit = (v: unknown, key: string, depth: number): ProtectedHit | undefined => {
    if (depth > 8) return undefined;
    if (typeof v === "string") {
      if (key === "command") return commandHit(v, cwd, paths);
      if (key === "patch") return patchHit(v, cwd, paths);
      if (!PATH_KEY.test(key)) return undefined;
      const p = protectedPathOf(v, cwd, paths);
      return p ? { path: p, argument: key } : undefined;
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

function patchHit(text: string, cwd: string, paths: readonly string[]): ProtectedHit | undefined {
  for (const f of patchPaths(text)) {
    const p = protectedPathOf(f, cwd, paths);
    if (p) return { path: p, argument: "patch" };
  }
  return undefined;
}

function commandHit(text: string, cwd: string, paths: readonly string[]): ProtectedHit | undefined {
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
          const p = protectedPathOf(cand, cwd, paths);
          if (p && !(readOnly(c) && !c.writes.includes(w))) return { path: p, argument: "command" };
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
