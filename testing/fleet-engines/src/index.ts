// Throwaway Redis and PostgreSQL servers for the fleet tests and benchmark: Debian's
// redis-server and PostgreSQL binaries on free loopback ports, data in a temporary
// directory, killed when the test process exits however it exits (nothing outlives it).
//
// PostgreSQL refuses to run as root, and CI runs as root: then initdb and postgres run as
// the `postgres` user the Debian package creates (spawn's uid/gid, so the server is our
// direct child and a kill reaches it, unlike through runuser, which forks).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A free loopback port (there is a window before the caller binds it; the servers fail loudly if lost). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Where Debian keeps initdb and postgres (not on PATH), newest version first. */
export function postgresBinDir(): string | undefined {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], "bin") : undefined;
}

/** Whether both engines are installed (.ci/run installs them). */
export function enginesAvailable(): boolean {
  try {
    execFileSync("redis-server", ["--version"], { stdio: "ignore" });
  } catch {
    return false;
  }
  return postgresBinDir() !== undefined;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous on purpose: "exit" handlers cannot wait.
  process.once("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}

function waitForPort(port: number, child: ChildProcess, what: string, log: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(new Error(`${what} exited before it listened:\n${log()}`));
        return;
      }
      const sock = createConnection({ host: "127.0.0.1", port });
      sock.once("connect", () => {
        sock.destroy();
        resolve();
      });
      sock.once("error", () => {
        sock.destroy();
        if (Date.now() > deadline)
          reject(new Error(`${what} did not listen on ${port} within 20 s:\n${log()}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL: a crash, no shutdown save) and starts it again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * redis-server with the append-only file fsynced on every write (`appendfsync always`)
 * and no RDB snapshots: a write Redis acknowledged (a job moved to completed, a budget
 * charge) is on disk before the client hears about it, so even a crash (kill -9) loses
 * nothing acknowledged. `everysec` could lose the last second; RDB snapshots minutes.
 */
export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "fleet-redis-"));
  const port = await freePort();
  let child: ChildProcess;
  let output = "";
  const start = async () => {
    output = "";
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        dir,
        "--protected-mode",
        "no",
        "--loglevel",
        "warning",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout!.on("data", (d) => {
      output += String(d);
    });
    child.stderr!.on("data", (d) => {
      output += String(d);
    });
    track(child);
    await waitForPort(port, child, "redis-server", () => output);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart() {
      await stopChild(child, "SIGKILL");
      await start();
    },
    async stop() {
      await stopChild(child, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PostgresServer {
  /** postgres://fleet@127.0.0.1:PORT/fleet (trust authentication on loopback; no password). */
  readonly url: string;
  readonly port: number;
  /** Stops the server abruptly (immediate shutdown) and starts it again on the same data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The uid/gid to run PostgreSQL as: ourselves, or the `postgres` user when we are root. */
function postgresIdentity(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  return { uid, gid };
}

/**
 * A fresh cluster (initdb, trust auth for the loopback) and its server, with fsync off for
 * speed: a crashed server (the restart test) still finds every commit in the OS's cache;
 * only a crash of the machine could lose one. Commits stay synchronous: with
 * synchronous_commit off, a crash loses the last acknowledged ones, which a worker has
 * already acted on.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (/usr/lib/postgresql/*/bin); see .ci/run");
  const dir = mkdtempSync(join(tmpdir(), "fleet-pg-"));
  const data = join(dir, "data");
  const who = postgresIdentity();
  chmodSync(dir, 0o700);
  if (who) chownSync(dir, who.uid, who.gid);
  mkdirSync(data, { mode: 0o700 });
  if (who) chownSync(data, who.uid, who.gid);
  execFileSync(
    join(bin, "initdb"),
    ["-D", data, "-U", "fleet", "-A", "trust", "--no-sync", "--no-instructions", "-E", "UTF8"],
    { stdio: "pipe", cwd: dir, ...(who ?? {}), env: { ...process.env, LC_ALL: "C" } },
  );
  const port = await freePort();
  let output = "";
  let child: ChildProcess;
  const start = async () => {
    output = "";
    child = spawn(
      join(bin, "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
        "-k",
        dir,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=200",
        "-c",
        "shared_buffers=16MB",
      ],
      { stdio: ["ignore", "pipe", "pipe"], cwd: dir, ...(who ?? {}), env: { ...process.env, LC_ALL: "C" } },
    );
    child.stdout!.on("data", (d) => {
      output += String(d);
    });
    child.stderr!.on("data", (d) => {
      output += String(d);
    });
    track(child);
    await waitForPort(port, child, "postgres", () => output);
    // Listening is not accepting: wait until the startup packet is answered.
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        execFileSync(join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port), "-U", "fleet"], {
          stdio: "ignore",
        });
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`postgres never became ready:\n${output}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await start();
  execFileSync(join(bin, "createdb"), ["-h", "127.0.0.1", "-p", String(port), "-U", "fleet", "fleet"], {
    stdio: "pipe",
  });
  return {
    url: `postgres://fleet@127.0.0.1:${port}/fleet`,
    port,
    async restart() {
      // Immediate shutdown: clients are cut off as in a crash; the server then recovers.
      await stopChild(child, "SIGQUIT");
      await start();
    },
    async stop() {
      // SIGINT: PostgreSQL's fast shutdown (backends are told to exit).
      await stopChild(child, "SIGINT");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Engines {
  readonly redis: RedisServer;
  readonly postgres: PostgresServer;
  stop(): Promise<void>;
}

/** Both servers, started side by side. */
export async function startEngines(): Promise<Engines> {
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  return {
    redis,
    postgres,
    async stop() {
      await Promise.all([redis.stop(), postgres.stop()]);
    },
  };
}
