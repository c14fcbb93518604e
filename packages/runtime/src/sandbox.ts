// The OS sandbox on Linux, bubblewrap, for `bash` commands (providers/exec) and for plugin
// processes (the launcher) (docs/decisions.md, "Security"). Each
// command runs in a mount namespace where everything is read-only except the writable
// roots and a private /tmp, the kernel-owned paths are read-only even inside a root, a
// new PID namespace hides every other process (no /proc/<kernel pid>/environ), the
// network is gone unless allowed, and the sandbox dies with the plugin.
//
// Where bubblewrap cannot run (macOS, a container without user namespaces) the mode
// decides: "required" refuses to run commands, "best_effort" runs them unconfined and
// says so once, "off" runs them unconfined silently.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, relative, sep } from "node:path";
import { gitMetadataKind, gitMetadataMounts } from "./git-metadata.ts";

export type SandboxMode = "required" | "best_effort" | "off";
export const SANDBOX_MODES: readonly SandboxMode[] = ["required", "best_effort", "off"];

export type Probe = { ok: true; bwrap: string } | { ok: false; reason: string };

let probed: Probe | undefined;

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "/usr/bin:/bin").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  for (const p of [`/usr/bin/${name}`, `/bin/${name}`, `/usr/local/bin/${name}`]) if (existsSync(p)) return p;
  return undefined;
}

/** Whether bubblewrap can build the sandbox here (cached per process). */
export function probeSandbox(force = false): Probe {
  if (probed && !force) return probed;
  if (process.platform !== "linux") {
    probed = { ok: false, reason: `bubblewrap is Linux-only (this is ${process.platform})` };
    return probed;
  }
  const bwrap = findOnPath("bwrap");
  if (!bwrap) {
    probed = { ok: false, reason: "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)" };
    return probed;
  }
  const r = spawnSync(
    bwrap,
    [
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--unshare-pid",
      "--unshare-net",
      "--die-with-parent",
      "--",
      "/bin/true",
    ],
    { encoding: "utf8", timeout: 10_000 },
  );
  if (r.status === 0) probed = { ok: true, bwrap };
  else {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split("\n")[0];
    probed = {
      ok: false,
      reason: `bwrap cannot create namespaces here (${why}); user namespaces may be disabled`,
    };
  }
  return probed;
}

/** For tests: forget the cached probe. */
export function resetProbe(): void {
  probed = undefined;
}

export interface SandboxSpec {
  readonly bwrap: string;
  /** Directories the command may write (the roots, or the working directory). */
  readonly writable: readonly string[];
  /** Kernel-owned paths: read-only even inside a writable directory. */
  readonly protectedPaths: readonly string[];
  readonly network: boolean;
  readonly cwd: string;
  /** Leave absent protected paths alone (no placeholder mount points): for long-lived processes. */
  readonly noPlaceholders?: boolean;
  /**
   * A private, empty /tmp (default true). Plugin processes keep the host's /tmp read-only
   * instead: their own code or the project may live there.
   */
  readonly privateTmp?: boolean;
  /**
   * bwrap's --new-session (default true): the sandbox leaves the caller's session, so it
   * cannot reach a controlling terminal. A caller whose process is already a session
   * leader without a terminal (exec's command leader, spawned detached) passes false: the
   * sandbox's init then stays in the caller's process group, and a signal to that group —
   * a timeout, a cancel, the watchdog's kill when the plugin dies — takes the sandbox's init
   * and with it the whole PID namespace. With a new session only --die-with-parent would,
   * and that was seen to miss about one kill in eight.
   */
  readonly newSession?: boolean;
}

export interface Wrapped {
  readonly file: string;
  readonly args: string[];
  /** Placeholders created on the host as mount points for absent protected paths; removed after the command. */
  readonly placeholders: string[];
}

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

let emptyDir: string | undefined;

function emptyDirectory(): string {
  emptyDir ??= mkdtempSync(join(tmpdir(), "agent-sandbox-empty-"));
  return emptyDir;
}

/**
 * The install directories under /tmp or /var/tmp that the command's interpreter and program
 * live in: for each of the kernel's Node and the command's absolute argv[0], its nearest
 * `node_modules` ancestor, else its directory.
 */
function hiddenInstallDirs(argv: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const file of [process.execPath, argv[0]]) {
    if (!file || !isAbsolute(file) || !(inside(file, "/tmp") || inside(file, "/var/tmp"))) continue;
    const parts = file.split(sep);
    const at = parts.lastIndexOf("node_modules");
    const dir = at > 0 ? parts.slice(0, at + 1).join(sep) : dirname(file);
    if (existsSync(dir)) dirs.add(dir);
  }
  return [...dirs];
}

/** The bwrap command line that runs `argv` in the sandbox. */
export function wrap(spec: SandboxSpec, argv: readonly string[]): Wrapped {
  const args: string[] = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  const privateTmp = spec.privateTmp !== false;
  if (privateTmp) {
    args.push("--tmpfs", "/tmp");
    if (existsSync("/var/tmp")) args.push("--tmpfs", "/var/tmp");
  }
  if (existsSync("/dev/shm")) args.push("--tmpfs", "/dev/shm");
  // A private /tmp would also hide the agent's own Node and packages when the agent is
  // installed under /tmp (a CI checkout, a scratch clone): put them back, read-only, as they
  // are everywhere else.
  if (privateTmp) for (const dir of hiddenInstallDirs(argv)) args.push("--ro-bind", dir, dir);
  // Private /tmp would hide a writable root under it: bind roots after the tmpfs mounts.
  for (const w of spec.writable) args.push("--bind", w, w);
  const readOnly: Array<{ path: string; source: string }> = [];
  const placeholders: string[] = [];
  const rootOf = (p: string) =>
    spec.writable.filter((w) => inside(p, w)).sort((a, b) => b.length - a.length)[0];
  for (const p of spec.protectedPaths) {
    const inRoot = rootOf(p) !== undefined;
    const underTmp = privateTmp && (inside(p, "/tmp") || inside(p, "/var/tmp"));
    if (!inRoot && !underTmp) continue; // read-only already
    const git = inRoot ? gitMetadataKind(p) : undefined;
    if (git) {
      const m = gitMetadataMounts(p, git);
      for (const r of m.readOnly) readOnly.push({ path: r, source: r });
      for (const d of m.pinned) readOnly.push({ path: d, source: "" });
      if (spec.noPlaceholders) continue;
      for (const h of m.placeholders) {
        if (h.kind === "commondir") {
          // Saying "." (the git directory itself) is what an absent commondir means; an
          // empty mount point would make every git outside the sandbox fail meanwhile.
          try {
            writeFileSync(h.path, ".\n", { flag: "wx" });
          } catch {
            continue;
          }
          readOnly.push({ path: h.path, source: h.path });
        } else readOnly.push({ path: h.path, source: h.kind === "dir" ? emptyDirectory() : "/dev/null" });
        placeholders.push(h.path);
      }
      continue;
    }
    if (existsSync(p)) {
      readOnly.push({ path: p, source: p });
      continue;
    }
    if (!inRoot || spec.noPlaceholders) continue;
    // An absent kernel-owned path inside a root must stay absent: mount something
    // read-only at its place so the command cannot create it. bwrap makes the mount
    // point on the host; the provider removes it after the command.
    const isDir = !p.endsWith(".hcl");
    readOnly.push({ path: p, source: isDir ? emptyDirectory() : "/dev/null" });
    placeholders.push(p);
  }
  // A read-only mount inside a writable root is only as good as its parents: a command could
  // rename `.git` away (taking the mount with it) and make a new one. Binding every directory
  // between the root and a mount onto itself makes it a mount point too, which rename and
  // rmdir refuse (EBUSY). Entries with no source are such directories named by git metadata.
  const pins = new Set<string>();
  for (const { path, source } of readOnly) {
    const root = rootOf(path);
    if (!root) continue;
    if (source === "") pins.add(path);
    for (let a = dirname(path); a !== root && inside(a, root); a = dirname(a)) if (existsSync(a)) pins.add(a);
  }
  const depth = (p: string) => p.split(sep).length;
  for (const d of [...pins].sort((a, b) => depth(a) - depth(b))) args.push("--bind", d, d);
  for (const { path, source } of readOnly
    .filter((r) => r.source !== "")
    .sort((a, b) => depth(a.path) - depth(b.path)))
    args.push("--ro-bind", source, path);
  args.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try");
  if (!spec.network) args.push("--unshare-net");
  args.push("--die-with-parent");
  if (spec.newSession !== false) args.push("--new-session");
  args.push("--chdir", spec.cwd, "--", ...argv);
  return { file: spec.bwrap, args, placeholders };
}

/** Removes the mount points bwrap left for absent protected paths (empty file or directory only). */
export function removePlaceholders(paths: readonly string[]): void {
  for (const p of paths) {
    try {
      const st = statSync(p);
      if (st.isDirectory()) rmdirSync(p);
      else if (st.isFile() && st.size === 0) rmSync(p);
      else if (st.isFile() && basename(p) === "commondir" && readFileSync(p, "utf8") === ".\n") rmSync(p);
      else if (st.isCharacterDevice()) rmSync(p);
    } catch {
      // gone already, or not empty: then it is not ours to remove
    }
  }
}

/** How the launcher sandboxes one plugin process (runtime host option `sandbox`). */
export interface PluginSandbox {
  readonly bwrap: string;
  /** No writable directory at all (a plugin that only reads); otherwise `writable`. */
  readonly readOnly: boolean;
  readonly writable: readonly string[];
  readonly protectedPaths: readonly string[];
  readonly network: boolean;
}

/** The bwrap command line for a plugin process; its private socket directory stays writable. */
export function wrapPlugin(
  box: PluginSandbox,
  file: string,
  args: readonly string[],
  socketDir: string,
  cwd: string,
): { file: string; args: string[] } {
  const w = wrap(
    {
      bwrap: box.bwrap,
      writable: [...(box.readOnly ? [] : box.writable), socketDir],
      protectedPaths: box.protectedPaths,
      network: box.network,
      cwd,
      noPlaceholders: true,
      privateTmp: false,
    },
    [file, ...args],
  );
  return { file: w.file, args: w.args };
}
