// Which sandbox a tool plugin's process runs in (docs/decisions/sandbox-and-policy.md). Decided
// by what the plugin declares: every operation data_source or read_only → a read-only
// filesystem; otherwise write access only to its configured `roots` (or the project).
// Kernel-owned paths stay read-only either way, no other process is visible, and the
// network is kept only for first-party plugins or where required_providers says
// `network = true`. A description the kernel has not seen yet (a first launch without a
// describe-cache entry) runs the process unconfined for Describe only: it is stopped as
// soon as its description shows it should be sandboxed, before anything else reaches it.
// A plugin installed from a git forge is sandboxed whatever it serves (frontends aside:
// they need the terminal): a model, context, memory or hook plugin gets a read-only
// filesystem, and a model plugin keeps the network it calls its vendor over.
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { basename, isAbsolute, join, resolve } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { type AgentConfig, kernelProtectedPaths, type ResolvedProvider } from "@pluggableharness/config";
import { type GetSchemaResponse, RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { type PluginSandbox, probeSandbox } from "@pluggableharness/runtime/sandbox";
import type { KernelLogger } from "../log.ts";

export class PluginSandboxState {
  /** Tool operations as described: undefined until a description is known. */
  tools: GetSchemaResponse | undefined;
  /** Whether the plugin serves the tool category (undefined: not known yet). */
  isTool: boolean | undefined;
  /** Every category it serves, once described. */
  categories: readonly string[] | undefined;
  config: JsonObject | undefined;
  /** The sandbox the running process was launched with (null: unconfined; undefined: not launched). */
  launched: PluginSandbox | null | undefined;
  readonly #resolved: ResolvedProvider;
  readonly #config: AgentConfig;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #log: KernelLogger;

  constructor(
    resolved: ResolvedProvider,
    config: AgentConfig,
    env: Readonly<Record<string, string | undefined>>,
    log: KernelLogger,
  ) {
    this.#resolved = resolved;
    this.#config = config;
    this.#env = env;
    this.#log = log;
  }

  /** Every declared operation only reads. */
  readOnly(): boolean {
    const ops = this.tools?.tools ?? [];
    return (
      ops.length > 0 && ops.every((t) => t.kind === ToolKind.DATA_SOURCE || t.risk === RiskClass.READ_ONLY)
    );
  }

  /** The sandbox this provider should run in now, given what is known about it. */
  desired(): PluginSandbox | undefined {
    const mode = this.#config.settings.sandbox;
    const forge = this.#resolved.origin === "forge";
    const thirdPartyOther =
      forge &&
      this.isTool === false &&
      this.categories !== undefined &&
      !this.categories.includes("frontend");
    if (mode === "off" || (this.isTool !== true && !thirdPartyOther)) return undefined;
    if (this.#nestsAsRoot()) return undefined;
    const probe = probeSandbox();
    if (!probe.ok) {
      if (mode === "required") {
        throw new Error(
          `settings.sandbox = "required", and the plugin sandbox cannot run here: ${probe.reason}`,
        );
      }
      warnOnce(this.#log, probe.reason);
      return undefined;
    }
    const projectDir = this.#config.projectDir;
    const roots = this.config?.["roots"];
    const memoryDirs = this.#memoryDirs();
    const writable = memoryDirs
      ? memoryDirs
      : Array.isArray(roots) && roots.length > 0 && roots.every((r) => typeof r === "string")
        ? (roots as string[]).map((r) => (isAbsolute(r) ? r : resolve(projectDir, r)))
        : [projectDir];
    const required = this.#config.requiredProviders.find((r) => r.localName === this.#resolved.localName);
    return {
      bwrap: probe.bwrap,
      readOnly: thirdPartyOther || this.readOnly(),
      writable,
      // Git metadata stays writable here: the git provider writes .git/config (branch
      // tracking) itself, with its own safe configuration; bash and the file tools are
      // kept from it by the command sandbox and the gate (docs/security/git.md).
      protectedPaths: kernelProtectedPaths(projectDir, this.#env, { gitMetadata: false }),
      nests: nestsCommandSandbox(this.#resolved),
      network:
        required?.network ??
        (this.#resolved.origin === "first_party" || (thirdPartyOther && this.categories!.includes("model"))),
    };
  }

  /**
   * A first-party plugin that runs its commands in a command sandbox of its own (exec's
   * bash, git, MCP servers), when the kernel runs as root: it runs outside the plugin
   * sandbox, so that its commands get the full one. A capability-free sandbox cannot
   * host another sandbox for root — the kernel lets a process map uid 0 into a new user
   * namespace only with CAP_SETFCAP, and bwrap's read-only covers over /proc/irq and
   * /proc/bus (made whenever host root is mapped) forbid a nested /proc — and keeping
   * the capabilities that would allow it would let the plugin remount its own sandbox
   * writable. See docs/security/sandbox-privileges.md.
   */
  #nestsAsRoot(): boolean {
    return outsidePluginSandbox(this.#resolved);
  }

  /**
   * The first-party memory provider writes only its record directories: the project's
   * .agent/memory/ (inside the kernel-owned .agent/, which stays read-only around it) and
   * the global one (`global_dir`, else $XDG_DATA_HOME/agent/memory). Undefined for any other
   * plugin.
   */
  #memoryDirs(): string[] | undefined {
    if (this.#resolved.origin !== "first_party" || !this.categories?.includes("memory")) return undefined;
    const configured = this.config?.["global_dir"];
    const data = this.#env["XDG_DATA_HOME"];
    const home = this.#env["HOME"] || homedir();
    const global =
      typeof configured === "string" && configured !== ""
        ? configured
        : join(data && isAbsolute(data) ? data : join(home, ".local", "share"), "agent", "memory");
    return [join(this.#config.projectDir, ".agent", "memory"), global];
  }

  /** For the launcher: the sandbox of this launch, remembered. */
  forLaunch = (): PluginSandbox | undefined => {
    const d = this.desired();
    // bwrap binds only directories that exist.
    if (d) for (const dir of this.#memoryDirs() ?? []) mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.launched = d ?? null;
    return d;
  };

  /** Whether the running process was launched with a sandbox other than the desired one. */
  stale(): boolean {
    if (this.launched === undefined) return false;
    const d = this.desired() ?? null;
    return JSON.stringify(d) !== JSON.stringify(this.launched);
  }
}

/** First-party providers that nest a command sandbox (runtime/sandbox.ts `wrap`). */
const NESTING_PROVIDERS = new Set(["exec", "git", "mcp"]);

/**
 * Whether this provider runs its commands in a command sandbox of its own: its plugin
 * sandbox then keeps user namespaces and goes without the system-call filter. Every other
 * plugin gets both (runtime/sandbox.ts `wrapPlugin`).
 */
function nestsCommandSandbox(resolved: Pick<ResolvedProvider, "origin" | "packageDir">): boolean {
  return (
    resolved.origin === "first_party" &&
    resolved.packageDir !== undefined &&
    NESTING_PROVIDERS.has(basename(resolved.packageDir))
  );
}

/** Whether this provider runs outside the plugin sandbox because it nests one as root (see #nestsAsRoot). */
export function outsidePluginSandbox(resolved: Pick<ResolvedProvider, "origin" | "packageDir">): boolean {
  return process.getuid?.() === 0 && nestsCommandSandbox(resolved);
}

let warned = false;

function warnOnce(log: KernelLogger, reason: string): void {
  if (warned) return;
  warned = true;
  log.warn(
    `tool plugins run unconfined: ${reason}. Set settings { sandbox = "required" } to refuse that, or "off" to silence this`,
  );
}
