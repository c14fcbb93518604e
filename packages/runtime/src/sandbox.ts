// The OS sandbox on Linux, bubblewrap, for `bash` commands (providers/exec) and for plugin
// processes (the launcher) (docs/decisions/sandbox-and-policy.md). Each
// command runs in a mount namespace where everything is read-only except the writable
// roots and a private /tmp, the kernel-owned paths are read-only even inside a root, a
// new PID namespace hides every other process (no /proc/<kernel pid>/environ), the
// network is gone unless allowed, and the sandbox dies with the plugin.
//
// Where bubblewrap cannot run (macOS, a container without user namespaces) the mode
// decides: "required" refuses to run commands, "best_effort" runs them unconfined and
// says so once, "off" runs them unconfined silently.
//
// Neither kind of sandbox keeps a capability, root or not (docs/security/sandbox-privileges.md):
// both run in a user namespace with every capability dropped and no_new_privs (bwrap sets
// it always); a command sandbox, and the sandbox of a plugin that runs no commands, also
// cannot make a namespace of its own (--disable-userns) and run under a system-call filter
// (seccomp.ts). Where this bwrap lacks a piece, the
// sandbox goes without it and the probe says which (`agent doctor` reports it).

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, relative, sep } from "node:path";
import { gitMetadataKind, gitMetadataMounts } from "./git-metadata.ts";
import { commandHiddenPaths, maskArgs, pluginHiddenPaths } from "./hidden-paths.ts";
import { filterFile } from "./seccomp.ts";

export { commandHiddenPaths } from "./hidden-paths.ts";

export type SandboxMode = "required" | "best_effort" | "off";
export const SANDBOX_MODES: readonly SandboxMode[] = ["required", "best_effort", "off"];

/** Which privilege-dropping pieces this bwrap has, and can use here. */
export interface Hardening {
  /** --unshare-user: the sandbox gets its own user namespace. */
  readonly userns: boolean;
  /** --disable-userns (bwrap 0.8): no namespace can be made inside the sandbox. */
  readonly disableUserns: boolean;
  /** --cap-drop ALL: no capability, even for root. */
  readonly capDrop: boolean;
  /** --seccomp with this host's filter (seccomp.ts). */
  readonly seccomp: boolean;
}

export type Probe =
  | {
      ok: true;
      bwrap: string;
      hardening: Hardening;
      /** What the sandbox goes without here, and why (empty when it has everything). */
      weaker: string[];
    }
  | { ok: false; reason: string };

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

/** The flags `bwrap --help` lists (an older bwrap lacks the newer ones). */
function supportedFlags(bwrap: string): Set<string> {
  const r = spawnSync(bwrap, ["--help"], { encoding: "utf8", timeout: 10_000 });
  return new Set((`${r.stdout ?? ""}\n${r.stderr ?? ""}`.match(/--[a-z][a-z-]*/g) ?? []).map((f) => f));
}

const NONE: Hardening = { userns: false, disableUserns: false, capDrop: false, seccomp: false };

/** The trial a probe runs: a minimal command sandbox with `h`. */
function trial(bwrap: string, h: Hardening): { ok: boolean; why: string } {
  const base = [
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
  ];
  const line = withFilter(bwrap, [...base, ...hardeningArgs(h, "command"), "--", "/bin/true"], h.seccomp);
  const r = spawnSync(line.file, line.args, { encoding: "utf8", timeout: 10_000 });
  if (r.status === 0) return { ok: true, why: "" };
  return { ok: false, why: (r.stderr || r.error?.message || `exit ${r.status}`).trim().split("\n")[0] ?? "" };
}

/** Whether bubblewrap can build the sandbox here, and how hardened (cached per process). */
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
  // The strongest sandbox first: where it works (bwrap 0.8+ on x64/arm64), one trial is all.
  const filter = filterFile() !== undefined;
  const full: Hardening = { userns: true, disableUserns: true, capDrop: true, seccomp: filter };
  let r = trial(bwrap, full);
  const weaker: string[] = [];
  if (!filter) weaker.push(`no system-call filter for ${process.arch} (only x64 and arm64 have one)`);
  if (r.ok) {
    probed = { ok: true, bwrap, hardening: full, weaker };
    return probed;
  }
  // Otherwise each missing piece is found and reported; none is dropped silently.
  const flags = supportedFlags(bwrap);
  const seccomp = filter && flags.has("--seccomp");
  if (filter && !seccomp) weaker.push("this bwrap has no --seccomp");
  const capDrop = flags.has("--cap-drop");
  if (!capDrop) weaker.push("this bwrap has no --cap-drop: a sandbox run as root keeps root's capabilities");
  const disableUserns = flags.has("--disable-userns");
  const wanted: Hardening = { userns: true, disableUserns, capDrop, seccomp };
  // The same flags as the first trial would fail the same way.
  if (disableUserns && capDrop && seccomp === filter) r = { ok: false, why: r.why };
  else r = trial(bwrap, wanted);
  if (r.ok) {
    if (!disableUserns)
      weaker.push(
        "this bwrap has no --disable-userns (0.8+): only the system-call filter stops new namespaces",
      );
    probed = { ok: true, bwrap, hardening: wanted, weaker };
    return probed;
  }
  const first = r.why;
  const noUserns: Hardening = { userns: false, disableUserns: false, capDrop, seccomp };
  r = trial(bwrap, noUserns);
  if (r.ok) {
    weaker.push(`no user namespace of its own (${first})`);
    probed = { ok: true, bwrap, hardening: noUserns, weaker };
    return probed;
  }
  r = trial(bwrap, NONE);
  if (r.ok) {
    weaker.push(`none of user namespace, capability drop or system-call filter works here (${first})`);
    probed = { ok: true, bwrap, hardening: NONE, weaker };
    return probed;
  }
  probed = {
    ok: false,
    reason: `bwrap cannot create namespaces here (${r.why}); user namespaces may be disabled`,
  };
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
  /**
   * Paths hidden from the command whatever else is visible or writable (credential
   * stores: exec's deny_read/allow_read), in the order to apply them: a hidden
   * directory becomes an empty read-only tmpfs, a hidden file reads as empty, and a
   * path shown again inside a hidden directory is bound back read-only. Absolute,
   * symlink-free, existing paths.
   */
  readonly readMasks?: readonly ReadMask[];
  /** The hardening to apply (default: what probeSandbox found). */
  readonly hardening?: Hardening;
  /** "plugin": a plugin process, which may nest a command sandbox (see hardeningArgs). Default "command". */
  readonly kind?: "command" | "plugin";
  /**
   * More directories to hide (an empty tmpfs over each), on top of the ones every sandbox
   * hides (hidden-paths.ts): for commands, the kernel's own (ExecEnvironment.hidden_paths).
   */
  readonly hidden?: readonly string[];
}

/** One step of SandboxSpec.readMasks. */
export interface ReadMask {
  readonly path: string;
  readonly kind: "dir" | "file";
  /** true: hide it; false: show it again (inside a hidden directory). */
  readonly hide: boolean;
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

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function emptyDirectory(): string {
  emptyDir ??= mkdtempSync(join(tmpdir(), "agent-sandbox-empty-"));
  return emptyDir;
}

/**
 * The install directories under /tmp or /var/tmp that the command's interpreter and program
 * live in: for the kernel's Node and each absolute path in the command's argv that names a
 * file (the program, and a script given to an interpreter, as in an MCP server's
 * `command = ["node", "/tmp/…/server.mjs"]`), its nearest `node_modules` ancestor, else its
 * directory.
 */
function hiddenInstallDirs(argv: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const file of [process.execPath, ...argv]) {
    if (!file || !isAbsolute(file) || !(inside(file, "/tmp") || inside(file, "/var/tmp"))) continue;
    if (file !== argv[0] && file !== process.execPath && !isFile(file)) continue;
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
  // No socket of the kernel, its plugins, `agent serve` or the user's session is reachable.
  const masks = maskArgs(
    [...(privateTmp ? commandHiddenPaths() : pluginHiddenPaths()), ...(spec.hidden ?? [])],
    { writable: spec.writable, privateTmp, argv },
  );
  args.push(...masks.beforeRoots);
  // A private /tmp would also hide the agent's own Node and packages when the agent is
  // installed under /tmp (a CI checkout, a scratch clone): put them back, read-only, as they
  // are everywhere else.
  if (privateTmp) for (const dir of hiddenInstallDirs(argv)) args.push("--ro-bind", dir, dir);
  // Private /tmp would hide a writable root under it: bind roots after the tmpfs mounts.
  for (const w of spec.writable) args.push("--bind", w, w);
  args.push(...masks.afterRoots);
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
  // No capability, no privilege, no namespace of its own, the system-call filter.
  const kind = spec.kind ?? "command";
  const h = spec.hardening ?? currentHardening();
  const seccomp = h.seccomp && kind === "command";
  // Root in the sandbox is host root to sysctl's permission check (uid 0, no capability
  // asked): /proc/sys/kernel/core_pattern or modprobe would run a program as root outside.
  // bwrap covers /proc/sys only when the directory itself is writable, which it never is.
  // Only for root: a cover over part of /proc would forbid the /proc of a nested sandbox.
  if (process.getuid?.() === 0) args.push("--ro-bind", "/proc/sys", "/proc/sys");
  args.push(...readMaskArgs(spec, privateTmp, seccomp ? filterFile()?.dir : undefined));
  args.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try");
  if (!spec.network) args.push("--unshare-net");
  args.push("--die-with-parent");
  if (spec.newSession !== false) args.push("--new-session");
  args.push(...hardeningArgs(h, kind));
  args.push("--chdir", spec.cwd, "--", ...argv);
  const line = withFilter(spec.bwrap, args, seccomp);
  return { file: line.file, args: line.args, placeholders };
}

// --- Privileges (docs/security/sandbox-privileges.md) -------------------------------

/** What probeSandbox found (nothing when it has not run or bwrap cannot). */
function currentHardening(): Hardening {
  const p = probeSandbox();
  return p.ok ? p.hardening : NONE;
}

/** The file descriptor bwrap reads the system-call filter from (see withFilter). */
const FILTER_FD = 9;

/**
 * The flags that take every privilege away. A command sandbox gets all of them; the
 * sandbox of a plugin that nests one ("plugin": exec, git and MCP run their commands in a
 * command sandbox of their own) keeps what nesting needs: no --disable-userns, no filter.
 */
export function hardeningArgs(h: Hardening, kind: "command" | "plugin"): string[] {
  const out: string[] = [];
  if (h.userns) out.push("--unshare-user");
  if (h.userns && h.disableUserns && kind === "command") out.push("--disable-userns");
  if (h.capDrop) out.push("--cap-drop", "ALL");
  if (h.seccomp && kind === "command") out.push("--seccomp", String(FILTER_FD));
  return out;
}

/**
 * bwrap reads the filter from an open descriptor. Every caller spawns a plain command
 * line, so the line opens it: `/bin/sh -c 'exec "$@" 9<"$0"' <filter> bwrap <args>` —
 * sh opens the file on fd 9 and becomes bwrap (same pid, so process groups and signals
 * are unchanged); bwrap reads the filter and closes the descriptor before the command runs.
 */
function withFilter(bwrap: string, args: string[], seccomp: boolean): { file: string; args: string[] } {
  const filter = seccomp ? filterFile() : undefined;
  if (!filter) {
    const at = args.indexOf("--seccomp");
    if (at >= 0 && at < args.indexOf("--")) args.splice(at, 2);
    return { file: bwrap, args };
  }
  return { file: "/bin/sh", args: ["-c", `exec "$@" ${FILTER_FD}<"$0"`, filter.file, bwrap, ...args] };
}

/**
 * The mounts that hide readMasks (and the filter's own directory, when a writable root
 * would expose it). A hidden directory that holds a writable root or the working
 * directory gets them bound back inside it, then is made read-only.
 */
function readMaskArgs(spec: SandboxSpec, privateTmp: boolean, filterDir: string | undefined): string[] {
  const out: string[] = [];
  const masks = [...(spec.readMasks ?? [])];
  if (filterDir && spec.writable.some((w) => inside(filterDir, w)))
    masks.push({ path: filterDir, kind: "dir", hide: true });
  const hiddenDirs: string[] = [];
  for (const m of masks) {
    // Under a private /tmp only what a root brings back is visible.
    const underTmp = privateTmp && (inside(m.path, "/tmp") || inside(m.path, "/var/tmp"));
    if (underTmp && !spec.writable.some((w) => inside(m.path, w))) continue;
    if (inside(m.path, "/proc") || inside(m.path, "/dev")) continue;
    if (!m.hide) out.push("--ro-bind", m.path, m.path);
    else if (m.kind === "dir") {
      out.push("--tmpfs", m.path);
      hiddenDirs.push(m.path);
    } else out.push("--ro-bind", "/dev/null", m.path);
  }
  if (hiddenDirs.length === 0) return out;
  for (const w of [...spec.writable, spec.cwd]) {
    if (!hiddenDirs.some((d) => inside(w, d) && w !== d)) continue;
    if (!existsSync(w)) continue;
    out.push(spec.writable.includes(w) ? "--bind" : "--ro-bind", w, w);
    for (const p of spec.protectedPaths) if (inside(p, w) && existsSync(p)) out.push("--ro-bind", p, p);
  }
  for (const d of hiddenDirs) out.push("--remount-ro", d);
  return out;
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
  /**
   * The plugin runs its commands in a command sandbox of its own (exec, git, MCP): it keeps
   * what nesting needs (no --disable-userns, no filter). Any other plugin gets the command
   * sandbox's full hardening.
   */
  readonly nests?: boolean;
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
      kind: box.nests ? "plugin" : "command",
    },
    [file, ...args],
  );
  return { file: w.file, args: w.args };
}
