// Credential stores the tools do not read (docs/security/sandbox-privileges.md): the
// places where CLIs keep keys, tokens and passwords, and the sockets that act with the
// user's or root's authority (an ssh agent, a container engine, systemd, D-Bus). The exec provider hides them from
// commands (the sandbox mounts an empty directory or file over each), and the file tools
// refuse paths in them. `deny_read` adds paths and `allow_read` gives some back, in the
// block of each provider; the most specific entry that covers a path decides, and an
// allow_read of the very path a deny names wins.
import { realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import type { ConfigField, Diagnostic } from "./config.ts";
import { configError } from "./config.ts";

/** Hidden by default, relative to the home directory unless absolute. */
export const CREDENTIAL_STORES: readonly string[] = [
  "~/.ssh",
  "~/.gnupg",
  "~/.aws",
  "~/.azure",
  "~/.config/gcloud",
  "~/.kube",
  "~/.docker/config.json",
  "~/.netrc",
  "~/.npmrc",
  "~/.yarnrc.yml",
  "~/.pypirc",
  "~/.git-credentials",
  "~/.config/git/credentials",
  "~/.config/gh",
  "~/.config/hub",
  "~/.cargo/credentials",
  "~/.cargo/credentials.toml",
  "~/.gem/credentials",
  "~/.terraform.d/credentials.tfrc.json",
  "~/.vault-token",
  "~/.pgpass",
  "~/.my.cnf",
  "~/.password-store",
  "~/.local/share/keyrings",
  "~/.config/op",
  "~/.oci",
  "~/.boto",
  "~/.s3cfg",
  "~/.config/rclone",
  "~/.config/doctl",
  "~/.claude/.credentials.json",
  "~/.codex/auth.json",
  "/etc/shadow",
  "/etc/gshadow",
  // Sockets that act with root's authority for whoever connects as root (the sandbox
  // drops capabilities, not the uid): container engines, systemd and the system bus.
  "/run/docker.sock",
  "/var/run/docker.sock",
  "/run/containerd/containerd.sock",
  "/run/podman/podman.sock",
  "/run/snapd.socket",
  "/run/crio/crio.sock",
  "/run/k3s/containerd/containerd.sock",
  "/run/libvirt/libvirt-sock",
  "/var/snap/lxd/common/lxd/unix.socket",
  "/var/lib/lxd/unix.socket",
  "/run/systemd/private",
  "/run/dbus/system_bus_socket",
  "/var/run/dbus/system_bus_socket",
];

/** In the user's runtime directory: sockets that run things as the user, outside any sandbox. */
const RUNTIME_SOCKETS = ["bus", "systemd/private", "docker.sock", "podman/podman.sock"];

/**
 * Variables whose value names a credential file, directory or agent socket elsewhere
 * (KUBECONFIG is a list). Used where the user's environment is known (exec).
 */
export const CREDENTIAL_PATH_VARIABLES: readonly string[] = [
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_CONFIG_FILE",
  "AZURE_CONFIG_DIR",
  "CLOUDSDK_CONFIG",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "KUBECONFIG",
  "DOCKER_CONFIG",
  "GNUPGHOME",
  "GH_CONFIG_DIR",
  "NETRC",
  "NPM_CONFIG_USERCONFIG",
  "npm_config_userconfig",
  "PASSWORD_STORE_DIR",
  "PGPASSFILE",
  "SSH_AUTH_SOCK",
];

/** The agent.hcl attributes, shared by the providers that honour them. */
export function readRuleFields(provider: string): ConfigField[] {
  return [
    {
      name: "deny_read",
      type: "list_string",
      description:
        `Paths (absolute, or ~/…) the ${provider} provider's tools may not read, on top of the credential stores ` +
        "hidden by default (~/.ssh, ~/.aws, ~/.config/gcloud, ~/.kube, ~/.docker/config.json, ~/.netrc, ~/.npmrc, …).",
    },
    {
      name: "allow_read",
      type: "list_string",
      description:
        `Paths (absolute, or ~/…) the ${provider} provider's tools may read although a default or deny_read entry ` +
        "covers them; the most specific entry wins.",
    },
  ];
}

export interface ReadRules {
  /** Absolute, normalised; each also under its symlink-free spelling when that differs. */
  readonly deny: readonly string[];
  readonly allow: readonly string[];
  /** Where a refusal tells the user to look ("allow_read in the filesystem provider block"). */
  readonly setting: string;
  /** The home directory `~` stands for. */
  readonly home: string;
}

function trimSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, "") || "/" : p;
}

function expand(entry: string, home: string): string | undefined {
  if (entry === "~" || entry === "~/") return home;
  if (entry.startsWith("~/")) return trimSlash(normalize(join(home, entry.slice(2))));
  if (isAbsolute(entry)) return trimSlash(normalize(entry));
  return undefined;
}

/** Both spellings of `p`: as written, and with the symlinks of its existing part resolved. */
function spellings(p: string): string[] {
  let head = p;
  const tail: string[] = [];
  for (let i = 0; i < 256; i++) {
    try {
      const real = join(realpathSync(head), ...tail.reverse());
      return real === p ? [p] : [p, real];
    } catch {
      const parent = dirname(head);
      if (parent === head) return [p];
      tail.push(head.slice(parent.length).replace(/^\/+/, ""));
      head = parent;
    }
  }
  return [p];
}

/**
 * Checks and expands a block's deny_read/allow_read. Entries must be absolute or start
 * with `~/`; a bad entry is a diagnostic naming it.
 */
export function readRulesFrom(
  values: { deny_read?: unknown; allow_read?: unknown },
  opts: {
    home?: string | undefined;
    /** The user's environment, for CREDENTIAL_PATH_VARIABLES (absent: defaults only). */
    env?: Readonly<Record<string, string | undefined>>;
    setting: string;
  },
): { rules: ReadRules; problems: Diagnostic[] } {
  const home = opts.home && isAbsolute(opts.home) ? opts.home : homedir();
  const problems: Diagnostic[] = [];
  const read = (name: "deny_read" | "allow_read"): string[] => {
    const raw = values[name];
    if (raw === undefined || raw === null) return [];
    if (!Array.isArray(raw) || raw.some((v) => typeof v !== "string")) {
      problems.push(configError([name], `${name} must be a list of paths`));
      return [];
    }
    const out: string[] = [];
    for (const entry of raw as string[]) {
      const p = entry.includes("\0") ? undefined : expand(entry.trim(), home);
      if (p === undefined || entry.trim() === "") {
        problems.push(
          configError(
            [name],
            `${name} entries must be absolute paths or start with ~/`,
            `${JSON.stringify(entry)} is neither`,
          ),
        );
        continue;
      }
      if (p === "/") {
        problems.push(configError([name], `${name} cannot name the root directory`));
        continue;
      }
      out.push(p);
    }
    return out;
  };
  const denied = read("deny_read");
  const allowed = read("allow_read");
  const fromEnv: string[] = [];
  const env = opts.env ?? {};
  for (const name of CREDENTIAL_PATH_VARIABLES) {
    const v = env[name];
    if (!v) continue;
    for (const part of name === "KUBECONFIG" ? v.split(":") : [v]) {
      if (isAbsolute(part) && normalize(part) !== "/") fromEnv.push(trimSlash(normalize(part)));
    }
  }
  const runtime = env["XDG_RUNTIME_DIR"];
  if (runtime && isAbsolute(runtime)) for (const s of RUNTIME_SOCKETS) fromEnv.push(join(runtime, s));
  // unix:path=/run/user/1000/bus,guid=… and unix:///run/docker.sock
  for (const v of [env["DBUS_SESSION_BUS_ADDRESS"], env["DOCKER_HOST"]]) {
    const m = v ? /^unix:(?:path=|\/\/)?([^,;]+)/.exec(v) : null;
    if (m?.[1] && isAbsolute(m[1])) fromEnv.push(trimSlash(normalize(m[1])));
  }
  const defaults = CREDENTIAL_STORES.map((e) => expand(e, home)!);
  const all = (list: string[]) => [...new Set(list.flatMap(spellings))];
  return {
    rules: {
      deny: all([...defaults, ...fromEnv, ...denied]),
      allow: all(allowed),
      setting: opts.setting,
      home,
    },
    problems,
  };
}

function covers(entry: string, path: string): boolean {
  const rel = relative(entry, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The deny entry that hides `path` (absolute), or undefined if the path may be read. */
export function hiddenBy(rules: ReadRules, path: string): string | undefined {
  let best: { entry: string; deny: boolean } | undefined;
  const consider = (entry: string, deny: boolean) => {
    if (!covers(entry, path)) return;
    // Longer is more specific; at equal length an allow wins.
    if (!best || entry.length > best.entry.length || (entry.length === best.entry.length && !deny))
      best = { entry, deny };
  };
  for (const d of rules.deny) consider(d, true);
  for (const a of rules.allow) consider(a, false);
  return best?.deny ? best.entry : undefined;
}

/** `p` as the user would write it (`~/…` under the home directory). */
export function tildeName(p: string, home: string): string {
  return covers(home, p) && p !== home ? `~/${relative(home, p).split(sep).join("/")}` : p;
}

/** The refusal for a path a rule hides: names the store and the setting that opens it. */
export function hiddenMessage(rules: ReadRules, requested: string, entry: string): string {
  const store = tildeName(entry, rules.home);
  return (
    `${JSON.stringify(requested.length > 200 ? `${requested.slice(0, 200)}…` : requested)} is in ${store}, ` +
    `a credential store the tools do not read (deny_read); to allow it, add "${store}" to ${rules.setting}`
  );
}

/** One mount the command sandbox applies (runtime/sandbox.ts ReadMask). */
export interface ReadMaskStep {
  readonly path: string;
  readonly kind: "dir" | "file";
  readonly hide: boolean;
}

function kindOf(p: string): "dir" | "file" | undefined {
  try {
    const st = statSync(p);
    return st.isDirectory() ? "dir" : "file";
  } catch {
    return undefined;
  }
}

/**
 * The mounts that enforce `rules` in a sandbox, shortest path first: each existing deny
 * entry not already hidden hides, each existing allow entry inside a hidden directory
 * shows again. Only symlink-free spellings are mounted (bubblewrap follows links in a
 * destination, and the real place is what must be covered).
 */
export function maskPlan(rules: ReadRules): ReadMaskStep[] {
  const entries = [
    ...rules.deny.map((path) => ({ path, deny: true })),
    ...rules.allow.map((path) => ({ path, deny: false })),
  ]
    .filter((e) => spellings(e.path).length === 1)
    .sort((a, b) => a.path.length - b.path.length || Number(a.deny) - Number(b.deny));
  const steps: ReadMaskStep[] = [];
  for (const e of entries) {
    // What decides for this path without the entry itself: its nearest covering entry.
    const parent = dirname(e.path);
    const hiddenNow = parent !== e.path && hiddenBy(rules, parent) !== undefined;
    if (e.deny === hiddenNow) continue; // changes nothing
    if (!e.deny && hiddenBy(rules, e.path) !== undefined) continue; // a longer deny wins anyway
    if (e.deny && hiddenBy(rules, e.path) === undefined) continue; // an allow of the same path wins
    const kind = kindOf(e.path);
    if (!kind) continue;
    steps.push({ path: e.path, kind, hide: e.deny });
  }
  return steps;
}
