// Where a command writes. Commands take an Io so tests can capture output without
// spawning a process; the binary passes the real streams.
export interface Io {
  readonly out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly err: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

export function processIo(): Io {
  return { out: process.stdout, err: process.stderr, env: process.env, cwd: process.cwd() };
}

export function line(stream: NodeJS.WritableStream, text = ""): void {
  stream.write(`${text}\n`);
}

/** A failure a command reports as one message and an exit status (no stack trace). */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}
