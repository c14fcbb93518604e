// What every harness (ours, each peer, the raw-client baseline) gives the scenarios.
import type { ToolCallSpec } from "@pluggableharness/fake-vendors";
import type { RunSpec } from "../lib/spawn.ts";

/** One logical step of a scripted task, before it is rendered as a harness's own tool call. */
export type Action =
  | { op: "read"; path: string }
  | { op: "grep"; pattern: string; dir: string }
  | { op: "edit"; path: string; old: string; new: string }
  | { op: "bash"; command: string }
  /** A read-only call that takes `ms` (ours: the bench's slow data_source; peers: `sleep`). */
  | { op: "slow"; id: number; ms: number };

export type ActionOp = Action["op"];

export interface ToolContext {
  /** Absolute path of the working directory the harness was started in. */
  cwd: string;
  /** Tool names the harness declared in the request being answered. */
  declared: readonly string[];
}

export interface ToolAdapter {
  /** For the report: which of the harness's tools each action maps to. */
  mapping: Record<ActionOp, string>;
  call(action: Action, ctx: ToolContext): ToolCallSpec;
}

export interface BenchEnv {
  /** Repository root. */
  root: string;
  /** bench/.peers */
  peersDir: string;
  /** Scratch directory of this benchmark run. */
  scratch: string;
  fakeUrl: string;
  /** Skip installing missing peers (report them as not installed instead). */
  noInstall: boolean;
  log(line: string): void;
}

export interface ProjectOptions {
  /** Also declare the bench's slow data_source provider (ours only). */
  slowTool?: boolean;
}

export interface RunContext {
  home: string;
  cwd: string;
  prompt: string;
  /** "stream": the most detailed headless output the harness has; "text": the final answer. */
  output: "text" | "stream";
}

export type Availability = { ok: true; version: string; note?: string } | { ok: false; reason: string };

export interface Harness {
  id: string;
  label: string;
  kind: "ours" | "peer" | "baseline";
  /** Installs or probes the harness once per benchmark run. */
  prepare(env: BenchEnv): Promise<Availability>;
  /** Writes the per-user configuration (pointing at the fake) into a fresh HOME. */
  setupHome(home: string, env: BenchEnv): void;
  /** Writes per-project files (ours: agent.hcl) into a working directory. */
  setupProject(dir: string, env: BenchEnv, options?: ProjectOptions): void;
  spec(run: RunContext, env: BenchEnv): RunSpec;
  /** Undefined when the harness has no tools (the baseline client). */
  tools?: ToolAdapter;
  /** Extra Node flags for every `agent` process (ours, when profiled). */
  nodeFlags?: string[];
}

/** Shared environment: a fresh HOME, no proxies or vendor variables leaking in from the shell. */
export function baseEnv(home: string): Record<string, string> {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    TMPDIR: process.env["TMPDIR"] ?? "/tmp",
    XDG_CONFIG_HOME: `${home}/.config`,
    XDG_STATE_HOME: `${home}/.local/state`,
    XDG_CACHE_HOME: `${home}/.cache`,
    XDG_DATA_HOME: `${home}/.local/share`,
    NO_COLOR: "1",
  };
}

/** Finds the declared tool for one of our operations, whatever prefix the kernel gives it. */
export function pickDeclared(declared: readonly string[], base: string, who: string): string {
  const exact = declared.find((n) => n === base);
  if (exact) return exact;
  const suffixed = declared.find((n) => n.endsWith(base) && /[^A-Za-z0-9]$/.test(n.slice(0, -base.length)));
  if (suffixed) return suffixed;
  throw new Error(
    `${who}: the request declares no tool named like "${base}" (declared: ${declared.join(", ")})`,
  );
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
