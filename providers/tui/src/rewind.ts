// /rewind in the terminal UI: pick one of the session's prompts, see what rewinding to just
// before it changes (the fork and every file), confirm, and continue in the fork with the
// prompt back in the editor to send again or change. The work is the host's (the agent CLI
// runs the TUI in its own process and owns the session files: packages/cli/src/commands/rewind.ts);
// a TUI without a host says /rewind is not available.

export interface RewindPrompt {
  readonly messageId: string;
  readonly timestamp: string;
  readonly text: string;
}

export interface RewindHost {
  prompts(sessionId: string): Promise<readonly RewindPrompt[]>;
  /** The plan as lines for the operator. */
  plan(sessionId: string, messageId: string): Promise<readonly string[]>;
  /** Forks and restores; the fork's id and a one-line summary. */
  apply(sessionId: string, messageId: string): Promise<{ forkId: string; summary: string }>;
}

export interface RewindUi {
  sessionId(): string | undefined;
  /** A turn is running (a rewind then waits). */
  busy(): boolean;
  say(lines: readonly string[], style?: "dim" | "warning" | "error"): void;
  /** Leaves the current session for `forkId` and puts `text` in the editor. */
  switchTo(forkId: string, text: string): void;
}

function firstLine(text: string): string {
  const l = text.split("\n")[0] ?? "";
  return l.length > 70 ? `${l.slice(0, 69)}…` : l;
}

export class RewindFlow {
  readonly #host: RewindHost | undefined;
  readonly #ui: RewindUi;
  /** The prompt a shown plan is waiting on a y/n for. */
  #pending: { sessionId: string; prompt: RewindPrompt } | undefined;

  constructor(host: RewindHost | undefined, ui: RewindUi) {
    this.#host = host;
    this.#ui = ui;
  }

  /** Whether the next line answers a shown plan. */
  get awaitingAnswer(): boolean {
    return this.#pending !== undefined;
  }

  /** `/rewind [n | message-id]`. */
  async start(args: string): Promise<void> {
    const host = this.#host;
    const sessionId = this.#ui.sessionId();
    if (!host || !sessionId) {
      this.#ui.say(["/rewind is not available here (run the agent with `agent run` to use it)."], "warning");
      return;
    }
    if (this.#ui.busy()) {
      this.#ui.say(["Wait for the turn to finish (or interrupt it with Esc) before rewinding."], "warning");
      return;
    }
    try {
      const prompts = await host.prompts(sessionId);
      if (prompts.length === 0) {
        this.#ui.say(["This session has no prompts to rewind to yet."], "dim");
        return;
      }
      const arg = args.trim();
      if (arg === "") {
        this.#ui.say(
          [
            "Rewind to just before one of your prompts (/rewind <number>):",
            ...prompts.map(
              (p, i) => `  ${String(i + 1).padStart(2)}. ${firstLine(p.text)}  (${p.messageId})`,
            ),
          ],
          "dim",
        );
        return;
      }
      const n = /^\d+$/.test(arg) ? Number(arg) : undefined;
      const prompt =
        n !== undefined ? prompts[n - 1] : prompts.find((p) => p.messageId === arg.toUpperCase());
      if (!prompt) {
        this.#ui.say([`No prompt ${arg}; /rewind lists them.`], "warning");
        return;
      }
      const lines = await host.plan(sessionId, prompt.messageId);
      this.#ui.say([...lines, "Rewind? y to go ahead, anything else keeps everything as it is."]);
      this.#pending = { sessionId, prompt };
    } catch (err) {
      this.#ui.say([`Cannot rewind: ${(err as Error).message}`], "error");
    }
  }

  /** The operator's answer to a shown plan. */
  async answer(line: string): Promise<void> {
    const pending = this.#pending;
    this.#pending = undefined;
    if (!pending || !this.#host) return;
    if (!/^y(es)?$/i.test(line.trim())) {
      this.#ui.say(["Nothing changed."], "dim");
      return;
    }
    if (this.#ui.busy()) {
      this.#ui.say(["A turn started meanwhile; nothing changed."], "warning");
      return;
    }
    try {
      const done = await this.#host.apply(pending.sessionId, pending.prompt.messageId);
      this.#ui.say([`${done.summary} Continuing in the fork.`], "dim");
      this.#ui.switchTo(done.forkId, pending.prompt.text);
    } catch (err) {
      this.#ui.say([`Cannot rewind: ${(err as Error).message}`], "error");
    }
  }
}
