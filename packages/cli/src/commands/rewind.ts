// `agent sessions rewind <id> --to <message-id>`: fork a session at one of its prompts and
// put the files its later turns changed back the way they were when that prompt was sent.
// The fork holds every event before the prompt (the original is left as it is); the files
// come from the session's checkpoints. The work is packages/state/src/rewind.ts, the same
// code the kernel's rewind operation (/rewind in every frontend) runs. What will change is
// shown first and confirmed on a terminal (`--yes` for headless use).
import { createInterface } from "node:readline/promises";
import {
  applySessionRewind,
  firstLine,
  planSessionRewind,
  RewindError,
  type RewindPlan,
  type RewindSource,
  rewindAnchors,
  rewindSource,
} from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { openReader } from "./show.ts";

async function confirm(
  question: string,
  stdin: NodeJS.ReadableStream,
  out: NodeJS.WritableStream,
): Promise<boolean> {
  const rl = createInterface({ input: stdin, output: out });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

function loadSession(typed: string): RewindSource {
  const reader = openReader(typed);
  try {
    return rewindSource(reader);
  } finally {
    reader.close();
  }
}

function plan(source: RewindSource, to: string): RewindPlan {
  try {
    return planSessionRewind(source, to);
  } catch (err) {
    if (err instanceof RewindError)
      throw new CliError(`agent: ${err.message}`, err.code === "not_an_anchor" ? EXIT.USAGE : EXIT.ERROR);
    throw err;
  }
}

export interface RewindOptions {
  to?: string;
  yes?: boolean;
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

export async function runRewind(io: Io, typed: string, opts: RewindOptions): Promise<number> {
  const source = loadSession(typed);
  if (!opts.to) {
    const prompts = rewindAnchors(source.events);
    if (prompts.length === 0) {
      line(io.out, `Session ${source.sessionId} has no prompts to rewind to.`);
      return EXIT.OK;
    }
    line(io.out, `Prompts of session ${source.sessionId} (rewind with --to <message-id>):`);
    for (const p of prompts) line(io.out, `  ${p.messageId}  ${p.timestamp}  ${firstLine(p.text)}`);
    return EXIT.OK;
  }
  const planned = plan(source, opts.to);
  for (const l of planned.lines) line(io.out, l);
  if (!opts.yes) {
    const stdin = opts.stdin;
    if (!stdin?.isTTY)
      throw new CliError(
        "agent: sessions rewind needs --yes to proceed without a terminal to confirm on",
        EXIT.USAGE,
      );
    if (!(await confirm("Proceed? [y/N] ", stdin, io.out))) {
      line(io.out, "Nothing changed.");
      return EXIT.OK;
    }
  }
  const done = applySessionRewind(planned);
  line(io.out, `${done.summary} Continue with: agent run --resume ${done.forkId}`);
  return done.unrestorable > 0 ? EXIT.ERROR : EXIT.OK;
}
