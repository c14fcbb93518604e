// Speculative prelaunch: a plugin process started before the kernel has even loaded, so
// its start-up overlaps the kernel's own. A run records which processes its session
// started first (the session's model and context providers) in a plan file; the next
// `agent run` with the same directory and flags spawns them from bin/agent.mjs at once,
// exactly as the launcher would. The launcher adopts such a process only when file,
// arguments, working directory and environment match what it was about to spawn;
// whatever is not adopted is killed once the kernel has started its session, or when
// the process exits. A plan whose configuration file changed is not used.
//
// A first-party plugin that runs in a worker thread is prelaunched the same way: the thread
// is started in this very process, before the kernel has loaded, and adopted by the launch
// that would have started exactly it.
//
// A prelaunched process gets the launch credentials the launcher would give it (AutoMTLS's
// host certificate, the same for the whole kernel process, and a token of its own), and
// the launcher takes them over with it.
//
// This module imports nothing but Node built-ins (and port-rpc's boot record, goplugin's
// constants and certificate maker, all built-ins only): bin/agent.mjs loads it before the CLI.
// The processes and the plan path live in a global registry because the bin and the
// (bundled or source) kernel each load their own copy of this module.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { MessageChannel, type ResourceLimits, Worker } from "node:worker_threads";
import { ENV, KERNEL_TOKEN_ENV } from "@pluggableharness/goplugin/constants";
import type { PortLike } from "@pluggableharness/port-rpc";
import { WORKER_DATA_KEY, WORKER_PROTOCOL, type WorkerBoot } from "@pluggableharness/port-rpc/boot";
import { hostCertificate, launchToken } from "./credentials.ts";
import { makeSocketDir } from "./socket-dirs.ts";

const FORMAT = 1;
/** Set per launch: never recorded, never compared. */
const SOCKET_DIR_VARIABLE = "PLUGIN_UNIX_SOCKET_DIR";
/** Launch credentials: recorded by name only, made afresh at prelaunch (the token never compared). */
const CREDENTIALS = new Set<string>([ENV.clientCert, KERNEL_TOKEN_ENV]);
/** Names whose values a plan records (handshake constants, the compile cache, the Node that
 * runs bundled-script plugins); no secrets. */
const RECORDED = /^(PLUGIN_[A-Z_]+|PLUGGABLEHARNESS_PLUGIN|NODE_COMPILE_CACHE|AGENT_NODE)$/;

export interface SpawnedSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string | undefined;
  readonly env: Readonly<Record<string, string>>;
  /** Set for a plugin run in a worker thread of this process: `file` is its entry module. */
  readonly thread?: ThreadSpec;
}

export interface ThreadSpec {
  readonly resourceLimits: ResourceLimits;
  readonly compileCache?: string;
}

interface PlanPlugin {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** name -> literal value, or null: the value comes from the starting process's environment. */
  readonly env: Readonly<Record<string, string | null>>;
  readonly thread?: ThreadSpec;
}

export interface PrelaunchPlan {
  readonly format: number;
  /** Files whose change invalidates the plan (agent.hcl), with size and mtime. */
  readonly watch: ReadonlyArray<{ readonly path: string; readonly size: number; readonly mtimeMs: number }>;
  readonly plugins: readonly PlanPlugin[];
}

interface Prelaunched {
  readonly spec: SpawnedSpec;
  readonly socketDir: string;
  /** The token it was started with (process plugins whose launcher gives one). */
  readonly token?: string;
  readonly child?: ChildProcess;
  readonly worker?: StartedWorker;
}

/**
 * What the worker transport uses of a plugin thread: a node:worker_threads Worker here, or
 * a thread of a sandbox host process seen from the kernel (sandbox-host.ts).
 */
export interface PluginThread {
  ref(): void;
  unref(): void;
  on(event: "error", listener: (err: Error) => void): unknown;
  once(event: "exit", listener: (code: number) => void): unknown;
  terminate(): Promise<number>;
  getHeapStatistics(): Promise<{ used_heap_size: number }>;
  readonly stdout: Readable;
  readonly stderr: Readable;
}

/** A plugin thread and the kernel's end of its port. */
export interface StartedWorker {
  readonly worker: PluginThread;
  readonly port: PortLike;
  /** The process the thread runs in, when it is not the kernel's own. */
  readonly pid?: number;
  /** Set once the thread has exited (it may do so before anyone adopts it). */
  exitCode?: number;
  /** The thread's last uncaught error, if any. */
  lastError?: Error;
}

interface Registry {
  planFile?: string;
  waiting: Prelaunched[];
}

const KEY = Symbol.for("pluggableharness.runtime.prelaunch");

function registry(): Registry {
  const g = globalThis as { [KEY]?: Registry };
  g[KEY] ??= { waiting: [] };
  return g[KEY];
}

/**
 * Spawns a plugin process the way the launcher does: its own process group, stdout and
 * stderr piped; `channels` more socket pairs from fd 3 on (a sandbox host speaks on one).
 */
export function spawnDetached(spec: SpawnedSpec, channels = 0): ChildProcess {
  return spawn(spec.file, [...spec.args], {
    env: { ...spec.env },
    cwd: spec.cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe", ...Array<"pipe">(channels).fill("pipe")],
    windowsHide: true,
  });
}

// Runs first in a plugin thread: the configured working directory for process.cwd() (a
// thread cannot chdir), the compile cache, then the plugin's own entry module.
export const WORKER_BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
const boot = workerData[${JSON.stringify(WORKER_DATA_KEY)}];
if (boot.cwd) { const cwd = boot.cwd; process.cwd = () => cwd; }
if (workerData.compileCache) {
  try { require("node:module").enableCompileCache(workerData.compileCache); } catch {}
}
import(workerData.entry);
`;

/**
 * Starts a plugin's worker thread the way the worker transport does: its entry module,
 * `spec.env` as its whole environment, stdout and stderr captured, the V8 limits, and a
 * MessagePort whose other end the plugin's serve() speaks on.
 */
export function startWorker(spec: SpawnedSpec & { thread: ThreadSpec }, name: string): StartedWorker {
  const { port1, port2 } = new MessageChannel();
  const boot: WorkerBoot = {
    protocol: WORKER_PROTOCOL,
    port: port2,
    channel: "port",
    ...(spec.cwd ? { cwd: spec.cwd } : {}),
  };
  const worker = new Worker(WORKER_BOOTSTRAP, {
    eval: true,
    name,
    workerData: {
      entry: pathToFileURL(spec.file).href,
      ...(spec.thread.compileCache ? { compileCache: spec.thread.compileCache } : {}),
      [WORKER_DATA_KEY]: boot,
    },
    transferList: [port2],
    env: { ...spec.env },
    argv: [...spec.args],
    stdout: true,
    stderr: true,
    resourceLimits: spec.thread.resourceLimits,
  });
  const started: StartedWorker = { worker, port: port1 };
  // Until someone adopts it, its errors are kept, never thrown (an 'error' without a listener would be).
  worker.on("error", (err) => {
    started.lastError = err;
  });
  worker.once("exit", (code) => {
    started.exitCode = code;
  });
  return started;
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {
      // gone
    }
  }
}

/** Where the plan of a run in `cwd` with these selecting flags lives. */
export function prelaunchPlanFile(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  flags: Readonly<Record<string, string | undefined>>,
): string {
  const xdg = env["XDG_CACHE_HOME"];
  const base = xdg?.startsWith("/") ? xdg : join(env["HOME"] || homedir(), ".cache");
  const key = createHash("sha256")
    .update(JSON.stringify([cwd, flags]))
    .digest("hex")
    .slice(0, 32);
  return join(base, "agent", "prelaunch", `${key}.json`);
}

/** The plan file the kernel of this process records its first session's launches in. */
export function setPrelaunchPlanFile(file: string | undefined): void {
  registry().planFile = file;
}

export function prelaunchPlanFileInUse(): string | undefined {
  return registry().planFile;
}

/** Writes a plan (atomically); values of inherited variables are not recorded. */
export function writePrelaunchPlan(
  file: string,
  watch: readonly string[],
  spawned: readonly SpawnedSpec[],
): void {
  const plan: PrelaunchPlan = {
    format: FORMAT,
    watch: watch.map((path) => {
      const st = statSync(path);
      return { path, size: st.size, mtimeMs: st.mtimeMs };
    }),
    plugins: spawned.map((s) => {
      const env: Record<string, string | null> = {};
      for (const [name, value] of Object.entries(s.env)) {
        if (name === SOCKET_DIR_VARIABLE) continue;
        env[name] = RECORDED.test(name) && !CREDENTIALS.has(name) ? value : null;
      }
      return {
        file: s.file,
        args: [...s.args],
        ...(s.cwd ? { cwd: s.cwd } : {}),
        env,
        ...(s.thread ? { thread: s.thread } : {}),
      };
    }),
  };
  try {
    mkdirSync(join(file, ".."), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(plan), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // only the next start is slower
  }
}

/** The plan in `file` if every watched file is unchanged. */
export function readPrelaunchPlan(file: string): PrelaunchPlan | undefined {
  let plan: PrelaunchPlan;
  try {
    plan = JSON.parse(readFileSync(file, "utf8")) as PrelaunchPlan;
  } catch {
    return undefined;
  }
  if (plan.format !== FORMAT || !Array.isArray(plan.plugins) || !Array.isArray(plan.watch)) return undefined;
  for (const w of plan.watch) {
    try {
      const st = statSync(w.path);
      if (st.size !== w.size || st.mtimeMs !== w.mtimeMs) return undefined;
    } catch {
      return undefined;
    }
  }
  return plan;
}

/**
 * Starts the plan's processes now and keeps them for the launcher to adopt. Returns how
 * many were started. Unadopted ones are killed by discardPrelaunched() or at exit.
 */
export function prelaunch(plan: PrelaunchPlan, source: Readonly<Record<string, string | undefined>>): number {
  const reg = registry();
  let started = 0;
  for (const p of plan.plugins) {
    const env: Record<string, string> = {};
    let token: string | undefined;
    for (const [name, value] of Object.entries(p.env)) {
      if (p.thread === undefined && name === ENV.clientCert) env[name] = hostCertificate().certPem;
      else if (p.thread === undefined && name === KERNEL_TOKEN_ENV) env[name] = token = launchToken();
      else if (CREDENTIALS.has(name)) continue;
      else {
        const v = value ?? source[name];
        if (v !== undefined) env[name] = v;
      }
    }
    let socketDir: string;
    try {
      socketDir = makeSocketDir();
    } catch {
      continue;
    }
    env[SOCKET_DIR_VARIABLE] = socketDir;
    const spec: SpawnedSpec = {
      file: p.file,
      args: p.args,
      cwd: p.cwd,
      env,
      ...(p.thread ? { thread: p.thread } : {}),
    };
    if (spec.thread) {
      try {
        const worker = startWorker({ ...spec, thread: spec.thread }, "plugin (prelaunched)");
        // Waiting for adoption must not keep the process alive; adoption refs it again.
        worker.worker.unref();
        reg.waiting.push({ spec, socketDir, worker });
        started++;
      } catch {
        rmSync(socketDir, { recursive: true, force: true });
      }
      continue;
    }
    const child = spawnDetached(spec);
    child.once("error", () => {});
    reg.waiting.push({ spec, socketDir, child, ...(token ? { token } : {}) });
    started++;
  }
  if (started > 0) process.once("exit", () => discardPrelaunched());
  return started;
}

function sameSpec(a: SpawnedSpec, b: SpawnedSpec): boolean {
  if (a.file !== b.file || a.cwd !== b.cwd || a.args.length !== b.args.length) return false;
  if (JSON.stringify(a.thread ?? null) !== JSON.stringify(b.thread ?? null)) return false;
  if (a.args.some((x, i) => x !== b.args[i])) return false;
  const names = (e: Readonly<Record<string, string>>) =>
    Object.keys(e)
      .filter((n) => n !== SOCKET_DIR_VARIABLE)
      .sort();
  const an = names(a.env);
  const bn = names(b.env);
  // Each launch has a token of its own: only that both have one counts.
  const same = (n: string) => n === KERNEL_TOKEN_ENV || a.env[n] === b.env[n];
  return an.length === bn.length && an.every((n, i) => n === bn[i] && same(n));
}

/**
 * A waiting prelaunched process started exactly as `spec` (its socket directory aside),
 * handed over to the caller, or undefined. A process that already exited is discarded.
 */
export function adoptPrelaunched(
  spec: SpawnedSpec,
): { child: ChildProcess; socketDir: string; token?: string } | undefined {
  const reg = registry();
  const i = reg.waiting.findIndex((w) => w.child && sameSpec(w.spec, spec));
  if (i < 0) return undefined;
  const [found] = reg.waiting.splice(i, 1);
  const { child, socketDir, token } = found!;
  if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
    rmSync(socketDir, { recursive: true, force: true });
    return undefined;
  }
  return { child, socketDir, ...(token ? { token } : {}) };
}

/** The same for a prelaunched plugin thread (its socket directory aside, `spec` must match). */
export function adoptPrelaunchedWorker(
  spec: SpawnedSpec,
): (StartedWorker & { socketDir: string }) | undefined {
  const reg = registry();
  const i = reg.waiting.findIndex((w) => w.worker && sameSpec(w.spec, spec));
  if (i < 0) return undefined;
  const [found] = reg.waiting.splice(i, 1);
  const { worker, socketDir } = found!;
  if (!worker || worker.exitCode !== undefined) {
    rmSync(socketDir, { recursive: true, force: true });
    return undefined;
  }
  return Object.assign(worker, { socketDir });
}

/** Kills every prelaunched process nobody adopted. */
export function discardPrelaunched(): void {
  const reg = registry();
  for (const w of reg.waiting.splice(0)) {
    if (w.child) killGroup(w.child);
    if (w.worker) {
      w.worker.port.close();
      void w.worker.worker.terminate();
    }
    rmSync(w.socketDir, { recursive: true, force: true });
  }
}

/** How many prelaunched processes wait for adoption (tests). */
export function prelaunchedCount(): number {
  return registry().waiting.length;
}
