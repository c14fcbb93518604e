// `agent worker`: runs the fleet's tasks on this machine until stopped (packages/fleet's
// FleetWorker). SIGTERM or Ctrl-C once: take no new job and finish the running ones; a
// second time: interrupt them, upload their sessions and hand their jobs back to the
// queue, where another worker resumes them.
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import { fleetEngines } from "./batch.ts";

export interface WorkerOptions {
  concurrency?: string;
  workDir?: string;
  lockMs?: string;
  stalledCheckMs?: string;
}

function positiveInt(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    throw new CliError(`${flag}: "${text}" is not a positive integer`, EXIT.USAGE);
  return n;
}

export async function runWorker(io: Io, opts: WorkerOptions): Promise<number> {
  const concurrency = positiveInt(opts.concurrency, "--concurrency", 1);
  const lockMs = positiveInt(opts.lockMs, "--lock-ms", 30_000);
  const stalledCheckMs = positiveInt(opts.stalledCheckMs, "--stalled-check-ms", 30_000);
  // The same path on every machine: a resumed session's working directory is recorded in it.
  const workRoot = opts.workDir
    ? isAbsolute(opts.workDir)
      ? opts.workDir
      : resolve(io.cwd, opts.workDir)
    : join(tmpdir(), "agent-fleet");
  const engines = fleetEngines(io);
  const { FleetWorker } = await import("@pluggableharness/fleet");
  const log = (text: string) => line(io.err, `${new Date().toISOString()} ${text}`);
  let worker: Awaited<ReturnType<typeof FleetWorker.start>>;
  try {
    worker = await FleetWorker.start({
      redisUrl: engines.redisUrl,
      postgresUrl: engines.postgresUrl,
      concurrency,
      workRoot,
      installationRoot: installationRoot(),
      env: io.env,
      lockMs,
      stalledCheckMs,
      log,
    });
  } catch (err) {
    throw new CliError(`agent worker: cannot start: ${(err as Error).message}`, EXIT.ERROR);
  }
  log(`worker ${worker.id} ready: concurrency ${concurrency}, work directory ${workRoot}`);
  let signals = 0;
  await new Promise<void>((done) => {
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals === 1) {
        log(`${sig}: draining (no new task; running ones finish). ${sig} again hands them back.`);
        worker.drain().then(done, done);
      } else if (signals === 2) {
        log(`${sig}: handing the running tasks back to the queue`);
        worker.handBack().then(done, done);
      } else process.exit(130);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  log(`worker ${worker.id} stopped`);
  return EXIT.OK;
}
