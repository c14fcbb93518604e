// `agent attach [session]`: a terminal UI on a session `agent serve` hosts, as one more
// frontend next to whatever else is attached. It backfills the transcript, streams live,
// answers permission requests (the first answer from any frontend wins; the others
// withdraw theirs), interrupts with Esc; leaving (Ctrl-C twice, Ctrl-D, /exit) only
// detaches. A session no process runs is resumed in this project's server.
// `--web` prints the web UI's address for the session instead.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { pick, runTui } from "@pluggableharness/provider-tui";
import { listSessions } from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { dial, type Target, targetOf } from "../serve/client.ts";
import { liveServers, type ServerRecord, serverOf } from "../serve/endpoint.ts";
import { liveness } from "../serve/liveness.ts";
import { resolveSessionId, sessionLine } from "../session-ids.ts";
import type { RunInput } from "./run.ts";
import { projectDirOf } from "./serve.ts";

export interface AttachOptions {
  web?: boolean;
  /** host:port of a server's loopback TCP endpoint; the token comes from AGENT_SERVE_TOKEN. */
  tcp?: string;
}

/** Served sessions, newest first. */
function servedSessions(servers: readonly ServerRecord[]) {
  return listSessions({ log: () => {} })
    .sessions.map((info) => ({ info, live: liveness(info.sessionId, servers) }))
    .filter((s) => s.live?.kind === "serve");
}

async function chooseSession(
  io: Io,
  input: RunInput,
  servers: readonly ServerRecord[],
): Promise<string | undefined> {
  const served = servedSessions(servers);
  if (served.length === 0) {
    throw new CliError(
      servers.length === 0
        ? "agent attach: no agent serve is running (start one with `agent serve`, or `agent run --detach`)"
        : 'agent attach: the running servers host no session yet (`agent run --detach "…"` starts one)',
      EXIT.ERROR,
    );
  }
  if (served.length === 1) return served[0]!.info.sessionId;
  if (!input.stdin.isTTY || !io.out.isTTY) {
    throw new CliError(
      `agent attach: name a session; served sessions:\n${served.map((s) => `  ${sessionLine(s.info, true)}`).join("\n")}`,
      EXIT.USAGE,
    );
  }
  return pick({
    input: input.stdin as never,
    output: io.out as never,
    title: "Attach to a served session",
    items: served.map((s) => ({ value: s.info.sessionId, label: sessionLine(s.info, true) })),
    env: io.env,
  });
}

function tcpTarget(io: Io, hostPort: string): Target {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(hostPort);
  if (!m) throw new CliError(`--tcp: "${hostPort}" is not host:port`, EXIT.USAGE);
  const token = io.env["AGENT_SERVE_TOKEN"];
  if (!token) throw new CliError("--tcp: set AGENT_SERVE_TOKEN to the server's token", EXIT.USAGE);
  return { kind: "tcp", host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]), token };
}

export async function runAttach(
  io: Io,
  sessionArg: string | undefined,
  opts: AttachOptions,
  input: RunInput = { stdin: process.stdin },
): Promise<number> {
  let target: Target;
  let sessionId: string | undefined;
  let server: ServerRecord | undefined;
  if (opts.tcp) {
    if (!sessionArg) throw new CliError("agent attach --tcp needs a session id", EXIT.USAGE);
    target = tcpTarget(io, opts.tcp);
    sessionId = sessionArg.trim().toUpperCase();
  } else {
    const servers = liveServers(io.env);
    sessionId = sessionArg ? resolveSessionId(sessionArg) : await chooseSession(io, input, servers);
    if (sessionId === undefined) return EXIT.OK;
    const live = liveness(sessionId, servers);
    if (live?.kind === "run") {
      throw new CliError(
        `agent attach: session ${sessionId} runs in a terminal (agent run, pid ${live.pid ?? "?"}), not under agent serve; only served sessions can be attached (start sessions with \`agent run --detach\`)`,
        EXIT.ERROR,
      );
    }
    server = live?.kind === "serve" ? live.server : serverOf(io.env, projectDirOf(io));
    if (!server) {
      throw new CliError(
        `agent attach: no agent serve hosts session ${sessionId}; start one here (\`agent serve --background\`) and attach again to resume it there`,
        EXIT.ERROR,
      );
    }
    target = targetOf(server);
  }
  if (opts.web) {
    const web = server?.web;
    if (!web) throw new CliError("agent attach --web: this server was started without --web", EXIT.ERROR);
    line(io.out, `${web.url}&session=${encodeURIComponent(sessionId)}`);
    return EXIT.OK;
  }
  if (!input.stdin.isTTY) {
    throw new CliError("agent attach needs a terminal (use --web for the browser)", EXIT.USAGE);
  }
  const dialled = dial(target);
  const ignore = () => {};
  process.on("SIGINT", ignore);
  try {
    const result = await runTui({
      connection: dialled.connection,
      input: input.stdin as never,
      output: io.out as never,
      session: { kind: "resume", sessionId, fresh: false },
      env: io.env,
      detachOnExit: true,
    });
    const still = result.status === SessionStatus.RUNNING ? "keeps running" : "stays available";
    line(
      io.out,
      `Detached from ${sessionId}; it ${still} under agent serve (agent attach ${sessionId.slice(0, 10)}).`,
    );
    return EXIT.OK;
  } finally {
    process.off("SIGINT", ignore);
    dialled.close();
  }
}
