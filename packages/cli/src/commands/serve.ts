// `agent serve`: one kernel for this project in a process of its own, reachable by this
// user's frontends over the frontend protocol (serve/server.ts), so its sessions outlive
// the terminals that started or watched them. `agent attach`, `agent run --detach` and
// the web UI (`--web`) are its frontends; `agent sessions list` shows what it hosts.
// With `--background` the command starts the server detached and returns once it listens.
import { spawn } from "node:child_process";
import { appendFileSync, closeSync, fstatSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConfigError, loadGlobalConfig, loadProjectConfig } from "@pluggableharness/config";
import { createKernel, KernelLogger, type KernelLogRecord, LOG_LEVEL_ORDER } from "@pluggableharness/kernel";
import { tidySessionFile } from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";
import {
  ensurePrivateDir,
  liveServers,
  removeRecord,
  runtimeDir,
  type ServerRecord,
  serverOf,
  socketPath,
  writeRecord,
} from "../serve/endpoint.ts";
import { type Endpoint, startEndpoint } from "../serve/server.ts";
import { configFailure, formatLog, inProcessFrontends, logLevel } from "./kernel-start.ts";

export interface ServeOptions {
  /** Also listen on loopback TCP: a port (0 or true: any free one). */
  tcp?: string | boolean;
  /** Also serve the web UI on loopback: a port (true: any free one). */
  web?: string | boolean;
  /** What an ask becomes while no frontend is attached: wait (default), deny or allow. */
  ask?: "wait" | "deny" | "allow";
  background?: boolean;
  stop?: boolean;
  status?: boolean;
}

/** The first line a server prints once it listens. */
const READY = "agent serve: listening";

function port(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new CliError(`${flag}: "${value}" is not a port`, EXIT.USAGE);
  return n;
}

function logFile(env: NodeJS.ProcessEnv): string {
  const base = env["XDG_STATE_HOME"]?.startsWith("/")
    ? env["XDG_STATE_HOME"]
    : join(env["HOME"] ?? "/tmp", ".local", "state");
  return join(base, "agent", "serve.log");
}

/** The project directory `agent serve` in `cwd` would serve (where its agent.hcl is). */
export function projectDirOf(io: Io): string {
  const loaded = loadProjectConfig(projectOf(io).dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  return loaded.config.projectDir;
}

function describe(record: ServerRecord): string[] {
  return [
    `${READY} on unix:${record.socket} (project ${record.projectDir}, pid ${record.pid})`,
    ...(record.tcp
      ? [
          `  tcp: ${record.tcp.host}:${record.tcp.port} (agent attach --tcp reads AGENT_SERVE_TOKEN=${record.tcp.token})`,
        ]
      : []),
    ...(record.web ? [`  web UI: ${record.web.url}`] : []),
  ];
}

export async function runServe(io: Io, opts: ServeOptions): Promise<number> {
  if (opts.stop || opts.status) {
    const projectDir = projectDirOf(io);
    const record = serverOf(io.env, projectDir);
    if (!record) {
      line(io.out, `no agent serve runs for ${projectDir}`);
      return opts.stop ? EXIT.OK : EXIT.ERROR;
    }
    if (opts.status) {
      for (const l of describe(record)) line(io.out, l);
      return EXIT.OK;
    }
    process.kill(record.pid, "SIGTERM");
    line(io.out, `stopping agent serve (pid ${record.pid})`);
    return EXIT.OK;
  }
  if (opts.background) {
    const record = await startInBackground(io, opts);
    for (const l of describe(record)) line(io.out, l);
    return EXIT.OK;
  }
  return serveForeground(io, opts);
}

/**
 * Starts `agent serve` detached and waits until it has published its record. The server
 * writes nothing to this process (its output goes to serve.log): a pipe we stopped reading
 * would fail its next write.
 */
export async function startInBackground(io: Io, opts: ServeOptions = {}): Promise<ServerRecord> {
  const projectDir = projectDirOf(io);
  const existing = serverOf(io.env, projectDir);
  if (existing) return existing;
  const args = [
    process.argv[1]!,
    "serve",
    ...(opts.tcp !== undefined && opts.tcp !== false
      ? ["--tcp", String(opts.tcp === true ? 0 : opts.tcp)]
      : []),
    ...(opts.web !== undefined && opts.web !== false
      ? ["--web", String(opts.web === true ? 0 : opts.web)]
      : []),
    ...(opts.ask ? ["--ask", opts.ask] : []),
  ];
  const log = logFile(io.env);
  mkdirSync(dirname(log), { recursive: true, mode: 0o700 });
  const fd = openSync(log, "a", 0o600);
  const from = fstatSync(fd).size;
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(process.execPath, args, {
      cwd: io.cwd,
      env: { ...io.env, AGENT_SERVE_BACKGROUND: "1" },
      detached: true,
      stdio: ["ignore", fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  child.once("error", () => {
    exited = true;
  });
  child.unref();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const record = serverOf(io.env, projectDir);
    if (record && record.pid === child.pid) return record;
    if (exited || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!exited) child.kill("SIGTERM");
  let said = "";
  try {
    said = readFileSync(log, "utf8").slice(from).trim().split("\n").slice(-20).join("\n");
  } catch {
    // nothing to show
  }
  throw new CliError(`agent: the background server did not start${said ? `:\n${said}` : ""}`, EXIT.ERROR);
}

async function serveForeground(io: Io, opts: ServeOptions): Promise<number> {
  const background = io.env["AGENT_SERVE_BACKGROUND"] === "1";
  const tcpPort = port(opts.tcp, "--tcp");
  const webPort = port(opts.web, "--web");
  const loaded = loadProjectConfig(projectOf(io).dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const global = loadGlobalConfig({ env: io.env });
  if (!global.ok) throw configFailure(global.diagnostics);
  const config = loaded.config;
  const dir = ensurePrivateDir(runtimeDir(io.env));
  const running = liveServers(io.env).find((r) => r.projectDir === config.projectDir);
  if (running) {
    throw new CliError(
      `agent: agent serve already runs for ${config.projectDir} (pid ${running.pid}, unix:${running.socket})`,
      EXIT.ERROR,
    );
  }

  const level = logLevel(io.env, "info");
  const file = logFile(io.env);
  const sink = (r: KernelLogRecord) => {
    if (LOG_LEVEL_ORDER[r.level] < LOG_LEVEL_ORDER[level]) return;
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      appendFileSync(file, `${formatLog(r)}\n`, { mode: 0o600 });
    } catch {
      // logging must never take the server down
    }
  };
  const log = new KernelLogger(sink, "serve", level);

  let kernel: Awaited<ReturnType<typeof createKernel>>;
  try {
    kernel = await createKernel({
      projectDir: config.projectDir,
      installationRoot: installationRoot(),
      env: io.env,
      config,
      headlessAsk: opts.ask ?? "wait",
      exclude: inProcessFrontends(config),
      logSink: sink,
      logLevel: level,
      installProgress: (l) => line(io.err, l),
    });
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err.diagnostics);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }

  let endpoint: Endpoint | undefined;
  let web: { url(sessionId?: string): string; token: string; close(): Promise<void> } | undefined;
  let record: ServerRecord | undefined;
  const done = new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    process.once("SIGHUP", stop);
  });
  try {
    endpoint = await startEndpoint(kernel.frontends, {
      socket: socketPath(dir, config.projectDir),
      ...(tcpPort !== undefined ? { tcp: { host: "127.0.0.1", port: tcpPort } } : {}),
      log,
    });
    if (webPort !== undefined) {
      const { startWebUi } = await import("@pluggableharness/provider-web-ui");
      web = await startWebUi({
        connect: () => kernel.frontends.connect({ name: "web", interactive: true }),
        port: webPort,
        log: (m) => log.warn(m),
      });
    }
    record = {
      version: 1,
      pid: process.pid,
      projectDir: config.projectDir,
      socket: endpoint.socket,
      token: endpoint.token,
      ...(endpoint.tcp ? { tcp: endpoint.tcp } : {}),
      ...(web ? { web: { url: web.url(), token: web.token } } : {}),
      startedAt: new Date().toISOString(),
    };
    writeRecord(dir, record);
    // In the background our output is serve.log: the record is what the starter waits for.
    if (!background) for (const l of describe(record)) line(io.out, l);
    log.info("serving", { socket: endpoint.socket, tcp: endpoint.tcp?.port ?? null, web: web !== undefined });
    await done;
    return EXIT.OK;
  } finally {
    const ids = kernel.liveSessions().map((s) => s.sessionId);
    if (record) removeRecord(dir, record);
    await web?.close().catch(() => {});
    await endpoint?.close().catch(() => {});
    await kernel.shutdown().catch(() => {});
    for (const id of ids) tidySessionFile(id);
  }
}
