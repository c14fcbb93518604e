// What a sandbox hides (an empty tmpfs over each), kept apart from sandbox.ts so the masks
// stay one piece. A unix socket answers `connect` even through a read-only bind, so hiding
// is the only filesystem answer to "a command can reach a socket": the agent's runtime
// directory (every plugin socket directory, `agent serve`'s socket and record), the user's
// runtime directory (the session bus, systemd's user manager, ssh and gpg agents, which can
// start programs outside any sandbox), /run/user/<uid> whatever the environment says, and,
// for commands, the temp directory of every process on the way (the kernel's, the plugin's)
// and the plugin's own socket directory. A plugin sandbox keeps the host's /tmp visible (its
// code or the project may live there) and gets its own socket directory back.
import { existsSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, relative, sep } from "node:path";
import { agentRuntimeDir, socketBasesInUse } from "./socket-dirs.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** Directories hiding would break the system rather than protect anything. */
const NEVER = new Set([
  "/",
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/etc",
  "/proc",
  "/dev",
  "/sys",
]);

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Where sockets of this user's agents and desktop session live (both sandbox kinds hide these). */
function runtimeDirs(env: Env): string[] {
  const uid = process.getuid?.();
  return [
    agentRuntimeDir(env),
    // A base that fell back to the temp directory stays visible to plugins (their code may
    // live there); the sockets in it still authenticate their peer.
    ...socketBasesInUse().filter((b) => b !== tmpdir()),
    ...(env["XDG_RUNTIME_DIR"] ? [env["XDG_RUNTIME_DIR"]] : []),
    ...(uid !== undefined ? [`/run/user/${uid}`] : []),
  ];
}

/**
 * What a command sandbox hides, as this process sees it: the runtime directories, this
 * process's temp directory and, in a plugin, its own socket directory. The kernel adds its
 * own through ExecEnvironment (hidden_paths), since a plugin does not see its environment.
 */
export function commandHiddenPaths(env: Env = process.env): string[] {
  const own = env["PLUGIN_UNIX_SOCKET_DIR"];
  return [...runtimeDirs(env), tmpdir(), ...(env["TMPDIR"] ? [env["TMPDIR"]] : []), ...(own ? [own] : [])];
}

/** What a plugin sandbox hides: the runtime directories (its own socket directory is bound back). */
export function pluginHiddenPaths(env: Env = process.env): string[] {
  return runtimeDirs(env);
}

/** The directory an install under a hidden directory must be bound back from: its node_modules, else its own. */
function installDir(file: string): string {
  const parts = file.split(sep);
  const at = parts.lastIndexOf("node_modules");
  return at > 0 ? parts.slice(0, at + 1).join(sep) : dirname(file);
}

export interface MaskPlan {
  /** bwrap arguments to place before the writable binds (masks holding no root, and the installs bound back). */
  readonly beforeRoots: string[];
  /** bwrap arguments to place after them (masks inside a writable root). */
  readonly afterRoots: string[];
}

/**
 * The bwrap arguments that hide `paths`. Each is resolved (symlinks included, so another
 * name for it is hidden too); absent paths, system directories, paths already hidden by a
 * private /tmp and paths inside another mask are skipped; a writable root itself is never
 * hidden, and one inside a mask is bound after it. The interpreter and program `argv` needs
 * are bound back read-only if a mask would hide them.
 */
export function maskArgs(
  paths: readonly string[],
  opts: { writable: readonly string[]; privateTmp: boolean; argv: readonly string[] },
): MaskPlan {
  const real = (p: string): string | undefined => {
    try {
      return existsSync(p) ? realpathSync(p) : undefined;
    } catch {
      return undefined; // unreadable: nothing to mount over
    }
  };
  const writable = opts.writable.map((w) => real(w) ?? w);
  const roots = [...new Set([...opts.writable, ...writable])];
  const inRoot = (m: string) => roots.some((w) => inside(m, w));
  const privateDirs = opts.privateTmp ? ["/tmp", "/var/tmp", "/dev/shm"] : ["/dev/shm"];
  const masks = [...new Set(paths.filter((p) => p && isAbsolute(p)).flatMap((p) => real(p) ?? []))]
    .filter((m) => !NEVER.has(m))
    // Already hidden by a private /tmp, unless a root bound back over it shows it again.
    .filter((m) => !privateDirs.some((d) => inside(m, d)) || inRoot(m))
    .filter((m) => !roots.includes(m))
    .sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const m of masks) if (!kept.some((k) => inside(m, k))) kept.push(m);
  const beforeRoots: string[] = [];
  const afterRoots: string[] = [];
  const listFor = (m: string) => (inRoot(m) ? afterRoots : beforeRoots);
  for (const m of kept) {
    listFor(m).push("--tmpfs", m);
    // A writable directory inside a mask that itself lies in a root (a plugin's socket
    // directory in a runtime directory inside the project) is bound again over the mask.
    if (inRoot(m)) {
      opts.writable.forEach((w, i) => {
        if (inside(writable[i]!, m)) afterRoots.push("--bind", w, w);
      });
    }
  }
  const installs = new Map<string, string[]>();
  for (const file of [process.execPath, opts.argv[0]]) {
    if (!file || !isAbsolute(file)) continue;
    const mask = kept.find((m) => inside(file, m));
    const dir = mask && installDir(file);
    if (dir && existsSync(dir)) installs.set(dir, listFor(mask));
  }
  for (const [dir, list] of installs) list.push("--ro-bind", dir, dir);
  return { beforeRoots, afterRoots };
}
