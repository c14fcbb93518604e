// A hand-made FrontendConnection and fake terminal streams for driving the UI.
import { EventEmitter } from "node:events";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type ServerEvent, ServerEventSchema } from "@pluggableharness/protocol/frontend";
import type { ClientEventInit, FrontendConnection } from "../src/connection.ts";
import { VirtualTerminal } from "./vt.ts";

export class FakeConnection implements FrontendConnection {
  readonly sent: ClientEventInit[] = [];
  closed = false;
  private queue: ServerEvent[] = [];
  private wake: (() => void) | undefined;
  private waiters: Array<{ pred: (e: ClientEventInit) => boolean; resolve: (e: ClientEventInit) => void }> =
    [];

  readonly events: AsyncIterable<ServerEvent> = {
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<ServerEvent>> => {
        while (this.queue.length === 0) {
          if (this.closed) return { done: true, value: undefined };
          await new Promise<void>((r) => {
            this.wake = r;
          });
        }
        return { done: false, value: this.queue.shift()! };
      },
    }),
  };

  push(...events: MessageInitShape<typeof ServerEventSchema>[]): void {
    for (const e of events) this.queue.push(create(ServerEventSchema, e));
    this.wake?.();
  }

  send(event: ClientEventInit): void {
    this.sent.push(event);
    for (const w of [...this.waiters]) {
      if (w.pred(event)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(event);
      }
    }
  }

  /** Resolves with the first sent event (past or future) of this case. */
  next(kind: string): Promise<ClientEventInit> {
    const pred = (e: ClientEventInit) => e.event?.case === kind;
    const seen = this.sent.filter(pred);
    if (seen.length > 0 && !this.consumed.has(seen.at(-1)!)) {
      const e = seen.find((x) => !this.consumed.has(x))!;
      this.consumed.add(e);
      return Promise.resolve(e);
    }
    return new Promise((resolve) =>
      this.waiters.push({
        pred,
        resolve: (e) => {
          this.consumed.add(e);
          resolve(e);
        },
      }),
    );
  }
  private consumed = new Set<ClientEventInit>();

  close(): void {
    this.closed = true;
    this.wake?.();
  }
}

export class FakeInput extends EventEmitter {
  readonly isTTY: boolean;
  raw = false;
  constructor(isTTY: boolean) {
    super();
    this.isTTY = isTTY;
  }
  setRawMode(mode: boolean) {
    this.raw = mode;
  }
  setEncoding() {}
  resume() {}
  pause() {}
  type(text: string) {
    this.emit("data", text);
  }
}

export class PlainOutput {
  readonly isTTY = false;
  text = "";
  write(data: string) {
    this.text += data;
    return true;
  }
}

export function tty(columns = 80, rows = 30) {
  return { input: new FakeInput(true), output: new VirtualTerminal(columns, rows) };
}

/** Lets queued events, immediates and frames run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}
