// The terminal UI of `agent run`, painted before the kernel and the session exist: the
// prompt takes input at once while `run.ts` creates them behind it. What is submitted in
// the meantime is queued by the UI and sent once the session is attached; if the start
// fails, the UI ends (terminal restored, the unsent lines listed) before the error prints.
import type { FrontendConnection, SessionHandle } from "@pluggableharness/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { pendingConnection, type SessionTarget, Tui, type TuiResult } from "@pluggableharness/provider-tui";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";

export interface InteractiveStart {
  readonly tui: Tui;
  /** The kernel exists: the UI's connection goes to it. */
  connect(conn: FrontendConnection): void;
  /** The session exists: the UI attaches to it, sends what was queued, and runs to its end. */
  attach(handle: SessionHandle, model: string, resumed: boolean, firstMessage?: string): Promise<number>;
  /** The start failed: the UI ends, restoring the terminal, before the caller reports why. */
  abandon(): Promise<void>;
  dispose(): void;
}

export interface InteractiveOptions {
  input: { isTTY?: boolean };
  model: string;
  env: NodeJS.ProcessEnv;
  history: { entries: string[]; append?: (entry: string) => void };
  workingDirectory: string;
  protectedPaths: readonly string[];
}

/** What leaving an interactive session prints: how to come back to it. */
export function resumeHint(sessionId: string): string {
  return `To continue this session: agent run --resume ${sessionId}`;
}

export function startInteractive(io: Io, stdin: unknown, options: InteractiveOptions): InteractiveStart {
  if (!options.input.isTTY)
    throw new CliError("agent run: interactive mode needs a terminal; use -p for headless runs", EXIT.USAGE);
  const conn = Promise.withResolvers<FrontendConnection>();
  const target = Promise.withResolvers<SessionTarget>();
  // Both settle once; a rejection nobody awaits must not become an unhandled one.
  conn.promise.catch(() => {});
  target.promise.catch(() => {});
  // SIGINT cannot arrive while the UI holds the terminal in raw mode; ignore stray ones.
  const ignore = () => {};
  process.on("SIGINT", ignore);
  const tui = new Tui({
    connection: pendingConnection(conn.promise),
    input: stdin as never,
    output: io.out as never,
    session: target.promise,
    model: options.model,
    env: options.env,
    history: options.history,
    workingDirectory: options.workingDirectory,
    protectedPaths: options.protectedPaths,
  });
  const result: Promise<TuiResult> = tui.run();
  const failed = new Error("the session could not start");
  return {
    tui,
    connect: (c) => conn.resolve(c),
    async attach(handle, model, resumed, firstMessage) {
      target.resolve({
        kind: "resume",
        sessionId: handle.id,
        fresh: !resumed,
        model,
        ...(firstMessage ? { prompt: firstMessage } : {}),
      });
      const r = await result;
      // The session the UI ended on (it may have switched with /clear or /resume).
      if (r.sessionId) line(io.out, resumeHint(r.sessionId));
      if (r.status === SessionStatus.FAILED) return EXIT.ERROR;
      if (
        r.status === SessionStatus.ERROR_MAX_TURNS ||
        r.status === SessionStatus.ERROR_MAX_BUDGET_USD ||
        r.status === SessionStatus.ERROR_MAX_WALL_CLOCK
      )
        return EXIT.BOUND;
      return EXIT.OK;
    },
    async abandon() {
      conn.reject(failed);
      target.reject(failed);
      await result;
    },
    dispose() {
      process.off("SIGINT", ignore);
    },
  };
}
