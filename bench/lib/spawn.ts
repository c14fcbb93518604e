// Runs one harness process with the timestamps the scenarios need, all on the runner's
// process.hrtime clock (the clock the fake vendor stamps requests with): spawn, first and
// last stdout byte, exit. Optionally samples the peak RSS of the whole process tree.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const SAMPLER = fileURLToPath(new URL("./rss-sampler.ts", import.meta.url));
const KEEP_STDOUT_BYTES = 8 * 1024 * 1024;
const KEEP_STDERR_BYTES = 64 * 1024;

export interface RunSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface RunOptions {
  timeoutMs: number;
  sampleMemory?: boolean;
  lineTimes?: boolean;
  /** Record when this text first appears on stdout (`RunResult.watchedAt`). */
  watchFor?: string;
  /** With `watchFor`: end the run (SIGTERM to its group) once the text appeared. */
  stopOnWatch?: boolean;
}

export interface StdoutLine {
  at: bigint;
  type: string;
  role?: string;
}

const MAX_LINES = 100_000;

export interface RunResult {
  spawnAt: bigint;
  exitAt: bigint;
  firstStdoutAt?: bigint;
  /** With `watchFor`: when the chunk that completed its first occurrence arrived. */
  watchedAt?: bigint;
  lastStdoutAt?: bigint;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** The spawn itself failed (ENOENT, EACCES). */
  spawnError?: string;
  stdout: string;
  stdoutBytes: number;
  stderr: string;
  pid?: number;
  memory?: {
    peakKb: number;
    peakProcesses: number;
    samples: number;
    maxProcesses: number;
    breakdown: { process: string; kb: number }[];
  };
  /** With `lineTimes`: when each stdout line arrived, with its JSON "type" (and "role") when it has one. */
  lines?: StdoutLine[];
}

interface Sampler {
  child: ChildProcess;
  result: Promise<RunResult["memory"]>;
}

async function startSampler(): Promise<Sampler> {
  const child = spawn(process.execPath, [SAMPLER], { stdio: ["pipe", "pipe", "inherit"] });
  let buffered = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const result = new Promise<RunResult["memory"]>((resolve) => {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffered += chunk;
      let nl = buffered.indexOf("\n");
      while (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line === "ready") onReady();
        else if (line.startsWith("{")) resolve(JSON.parse(line));
        nl = buffered.indexOf("\n");
      }
    });
    child.on("exit", () => resolve(undefined));
  });
  await ready;
  return { child, result };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Spawns `spec` in its own process group with stdin from /dev/null and waits for it to exit. */
export async function runProcess(spec: RunSpec, options: RunOptions): Promise<RunResult> {
  const sampler = options.sampleMemory ? await startSampler() : undefined;
  const out: Buffer[] = [];
  let outBytes = 0;
  let kept = 0;
  let err = "";
  let firstStdoutAt: bigint | undefined;
  let watchedAt: bigint | undefined;
  let watchTail = "";
  let lastStdoutAt: bigint | undefined;
  let timedOut = false;

  const spawnAt = process.hrtime.bigint();
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
  } catch (e) {
    sampler?.child.kill();
    const at = process.hrtime.bigint();
    return {
      spawnAt,
      exitAt: at,
      code: null,
      signal: null,
      timedOut: false,
      spawnError: (e as Error).message,
      stdout: "",
      stdoutBytes: 0,
      stderr: "",
    };
  }
  if (sampler && child.pid !== undefined) sampler.child.stdin!.write(`${child.pid}\n`);

  const lines: StdoutLine[] = [];
  let partial = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const now = process.hrtime.bigint();
    if (options.lineTimes && lines.length < MAX_LINES) {
      partial += chunk.toString("utf8");
      let nl = partial.indexOf("\n");
      while (nl >= 0) {
        const line = partial.slice(0, Math.min(nl, 300));
        partial = partial.slice(nl + 1);
        const type = /^\{"type":"([a-z_]+)"/.exec(line)?.[1] ?? "text";
        const role = /"role":"([a-z]+)"/.exec(line)?.[1];
        lines.push({ at: now, type, ...(role ? { role } : {}) });
        nl = partial.indexOf("\n");
      }
    }
    if (options.watchFor && watchedAt === undefined) {
      const text = watchTail + chunk.toString("utf8");
      if (text.includes(options.watchFor)) {
        watchedAt = now;
        if (options.stopOnWatch) killGroup(child.pid, "SIGTERM");
      } else watchTail = text.slice(-options.watchFor.length);
    }
    firstStdoutAt ??= now;
    lastStdoutAt = now;
    outBytes += chunk.length;
    if (kept < KEEP_STDOUT_BYTES) {
      out.push(chunk);
      kept += chunk.length;
    }
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    err += chunk;
    if (err.length > KEEP_STDERR_BYTES * 2) err = err.slice(-KEEP_STDERR_BYTES);
  });

  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid, "SIGKILL");
  }, options.timeoutMs);

  const exited = await new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    at: bigint;
    error?: string;
  }>((resolve) => {
    child.once("error", (e) =>
      resolve({ code: null, signal: null, at: process.hrtime.bigint(), error: e.message }),
    );
    child.once("exit", (code, signal) => resolve({ code, signal, at: process.hrtime.bigint() }));
  });
  clearTimeout(timer);
  // Let the pipes drain (bounded: a leftover grandchild may hold them open), then make sure
  // nothing of this run's process group survives into the next run.
  await Promise.race([
    new Promise<void>((resolve) => child.once("close", () => resolve())),
    new Promise<void>((resolve) => setTimeout(resolve, 2_000)),
  ]);
  killGroup(child.pid, "SIGKILL");

  let memory: RunResult["memory"];
  if (sampler) {
    const stop = setTimeout(() => sampler.child.stdin!.write("stop\n"), 3_000);
    memory = await sampler.result;
    clearTimeout(stop);
    sampler.child.stdin!.end();
  }
  const stdout = Buffer.concat(out).toString("utf8");
  return {
    spawnAt,
    exitAt: exited.at,
    firstStdoutAt,
    ...(watchedAt !== undefined ? { watchedAt } : {}),
    lastStdoutAt,
    code: exited.code,
    signal: exited.signal,
    timedOut,
    ...(exited.error ? { spawnError: exited.error } : {}),
    stdout,
    stdoutBytes: outBytes,
    stderr: err.slice(-KEEP_STDERR_BYTES),
    ...(child.pid !== undefined ? { pid: child.pid } : {}),
    ...(memory ? { memory } : {}),
    ...(options.lineTimes ? { lines } : {}),
  };
}

/** A one-line reason for a failed run: timeout, signal, exit status, and the last stderr line. */
export function failureReason(r: RunResult): string | undefined {
  if (r.spawnError) return `could not start: ${r.spawnError}`;
  const tail = errorLine(r.stderr) ?? lastLines(r.stderr || r.stdout, 2);
  if (r.timedOut) return `timed out${tail ? ` (last output: ${tail})` : ""}`;
  if (r.signal) return `killed by ${r.signal}${tail ? `: ${tail}` : ""}`;
  if (r.code !== 0) return `exited ${r.code}${tail ? `: ${tail}` : ""}`;
  return undefined;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, "g");

/** The last line that names an error, if any (a stack trace's frames say less than its message). */
function errorLine(text: string): string | undefined {
  const lines = text.replace(ANSI, "").split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!.trim();
    if (/error|fail|denied|refus|not found|cannot|unknown/i.test(l) && !/^at /.test(l))
      return l.slice(0, 300);
  }
  return undefined;
}

export function lastLines(text: string, n: number): string {
  const lines = text
    .replace(ANSI, "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  return lines.slice(-n).join(" | ").replace(/\s+/g, " ").slice(0, 300);
}
