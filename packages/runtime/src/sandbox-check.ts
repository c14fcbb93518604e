// What a sandbox actually holds, measured from inside it (`agent doctor`, tests): its
// capabilities, no_new_privs and seccomp mode as /proc/self/status shows them, and
// whether it can make a user namespace or remount / writable. The promise is zero of
// each (docs/security/sandbox-privileges.md); a shortfall is reported by name.
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { probeSandbox, wrap, wrapPlugin } from "./sandbox.ts";

export interface Measured {
  /** Hex capability sets from /proc/self/status ("" when unread). */
  readonly capEff: string;
  readonly capBnd: string;
  readonly noNewPrivs: string;
  /** 0 none, 1 strict, 2 filter. */
  readonly seccomp: string;
  readonly userns: "created" | "refused" | "untested";
  readonly remount: "done" | "refused" | "untested";
}

/** Run inside the sandbox: prints `key=value` lines. */
const PROBE = [
  "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status | sed 's/:[[:space:]]*/=/'",
  "if command -v unshare >/dev/null 2>&1; then if unshare -U true >/dev/null 2>&1; then echo userns=created; else echo userns=refused; fi; else echo userns=untested; fi",
  "if command -v mount >/dev/null 2>&1; then if mount -o remount,rw / >/dev/null 2>&1; then echo remount=done; else echo remount=refused; fi; else echo remount=untested; fi",
].join("\n");

function parse(out: string): Measured {
  const kv = new Map<string, string>();
  for (const line of out.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) kv.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  const pick = <T extends string>(k: string, allowed: readonly T[], dflt: T): T => {
    const v = kv.get(k) as T | undefined;
    return v !== undefined && allowed.includes(v) ? v : dflt;
  };
  return {
    capEff: kv.get("CapEff") ?? "",
    capBnd: kv.get("CapBnd") ?? "",
    noNewPrivs: kv.get("NoNewPrivs") ?? "",
    seccomp: kv.get("Seccomp") ?? "",
    userns: pick("userns", ["created", "refused", "untested"], "untested"),
    remount: pick("remount", ["done", "refused", "untested"], "untested"),
  };
}

const zero = (hex: string) => /^0+$/.test(hex);

/** What `m` holds beyond the promise, in words (empty: nothing). */
export function shortfalls(m: Measured, kind: "command" | "plugin"): string[] {
  const out: string[] = [];
  if (!zero(m.capEff)) out.push(`effective capabilities ${m.capEff || "unknown"}`);
  if (!zero(m.capBnd)) out.push(`bounding capabilities ${m.capBnd || "unknown"}`);
  if (m.noNewPrivs !== "1") out.push(`no_new_privs ${m.noNewPrivs || "unknown"}`);
  if (m.remount === "done") out.push("could remount / writable");
  if (kind === "command") {
    if (m.seccomp !== "2") out.push(`no system-call filter (seccomp mode ${m.seccomp || "unknown"})`);
    if (m.userns === "created") out.push("could create a user namespace");
  }
  return out;
}

export type Measurement =
  | { ok: true; measured: Measured; how: string }
  | { ok: false; error: string; how: string };

function run(file: string, args: readonly string[], how: string): Measurement {
  const r = spawnSync(file, [...args], {
    encoding: "utf8",
    timeout: 15_000,
    env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
  });
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split("\n")[0] ?? "";
    return { ok: false, error: why, how };
  }
  return { ok: true, measured: parse(r.stdout), how };
}

/**
 * Measures the command sandbox the way commands get it — nested in a plugin sandbox
 * (exec, git and MCP run there), except as root, where those providers run outside it
 * (kernel plugins/sandbox.ts) — and the plugin sandbox itself.
 */
export function measureSandboxes(): { command: Measurement; plugin: Measurement } | undefined {
  const probe = probeSandbox();
  if (!probe.ok) return undefined;
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "agent-sandbox-check-")));
  try {
    const command = wrap(
      { bwrap: probe.bwrap, writable: [dir], protectedPaths: [], network: false, cwd: dir },
      ["/bin/sh", "-c", PROBE],
    );
    const box = { bwrap: probe.bwrap, readOnly: false, writable: [dir], protectedPaths: [], network: false };
    // A tool plugin that runs no commands: held to the command sandbox's promise.
    const plugin = wrapPlugin(box, "/bin/sh", ["-c", PROBE], dir, dir);
    const asRoot = process.getuid?.() === 0;
    const nested = wrapPlugin({ ...box, nests: true }, command.file, command.args, dir, dir);
    return {
      command: asRoot
        ? run(command.file, command.args, "as the providers that run commands get it as root (not nested)")
        : run(nested.file, nested.args, "nested in a plugin sandbox, as exec, git and MCP run it"),
      plugin: run(plugin.file, plugin.args, "a tool plugin's process"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
