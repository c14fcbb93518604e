// A stand-in KernelCallbackService for plugins launched outside a real kernel: it counts
// tokens with the kernel's fallback formula, records Log and Emit calls, and lets a
// caller wait for a log entry (how plugins report what a cancelled call had done); RunSession
// answers as a test says (a spawn tool's tests), else UNIMPLEMENTED.
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { ProducerRefSchema } from "@pluggableharness/protocol/common";
import {
  KernelCallbackService,
  type RunSessionRequest,
  type RunSessionResponseSchema,
} from "@pluggableharness/protocol/kernel";
import { type CallbackRegistration, RpcError } from "@pluggableharness/runtime";

export interface RecordedLog {
  plugin: string;
  sessionId?: string;
  level: number;
  logger: string;
  message: string;
  fields: JsonObject;
}

export interface RecordedEmit {
  plugin: string;
  sessionId: string;
  kind: number;
  payload: Uint8Array;
}

/** ceil(utf8 bytes / 4) over the text blocks: the kernel's single fallback formula. */
export function fallbackTokenCount(texts: readonly string[]): number {
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
  return Math.ceil(bytes / 4);
}

export class RecordingKernel {
  readonly logs: RecordedLog[] = [];
  readonly emits: RecordedEmit[] = [];
  countTokensCalls = 0;
  /** Answer CountTokens as exact, as a kernel with a vendor tokenizer would (still the formula). */
  exactCounts = false;
  /** What ExecEnvironment answers; unset: UNIMPLEMENTED, as from a kernel without it. */
  execEnvironment:
    | { variables: Record<string, string>; withheld?: string[]; protectedPaths: string[] }
    | undefined;
  /** RunSession requests received, and how they are answered (unset: UNIMPLEMENTED). */
  readonly runSessions: RunSessionRequest[] = [];
  runSession: ((req: RunSessionRequest) => MessageInitShape<typeof RunSessionResponseSchema>) | undefined;
  #waiters: Array<{ match: (l: RecordedLog) => boolean; resolve: (l: RecordedLog) => void }> = [];
  #sequence = 0n;

  registration(): CallbackRegistration<typeof KernelCallbackService> {
    return {
      service: KernelCallbackService,
      implementation: (peer) => ({
        countTokens: (req) => {
          this.countTokensCalls++;
          const texts = req.content.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []));
          return { count: BigInt(fallbackTokenCount(texts)), exact: this.exactCounts };
        },
        log: (req) => {
          const entry: RecordedLog = {
            plugin: peer.plugin,
            ...(req.sessionId ? { sessionId: req.sessionId } : {}),
            level: req.entry?.level ?? 0,
            logger: req.entry?.logger ?? "",
            message: req.entry?.message ?? "",
            fields: req.entry?.fields ?? {},
          };
          this.logs.push(entry);
          this.#waiters = this.#waiters.filter((w) => {
            if (!w.match(entry)) return true;
            w.resolve(entry);
            return false;
          });
          return {};
        },
        emit: (req) => {
          this.emits.push({
            plugin: peer.plugin,
            sessionId: req.sessionId,
            kind: req.kind,
            payload: req.payload,
          });
          this.#sequence += 1n;
          return { id: `evt-${this.#sequence}`, sequence: this.#sequence };
        },
        describe: () => ({
          producer: create(ProducerRefSchema, { name: "conformance-kernel", version: "0.1.0" }),
        }),
        runSession: (req) => {
          this.runSessions.push(req);
          if (!this.runSession) throw Object.assign(new Error("RunSession is not served"), { code: 12 });
          return this.runSession(req);
        },
        execEnvironment: () => {
          const e = this.execEnvironment;
          // A real UNIMPLEMENTED status (a plain Error would reach the plugin as INTERNAL).
          if (!e)
            throw new RpcError(
              12,
              "ExecEnvironment is not served",
              "/pluggableharness.kernel.v1.KernelCallbackService/ExecEnvironment",
            );
          return { variables: e.variables, withheld: e.withheld ?? [], protectedPaths: e.protectedPaths };
        },
      }),
    };
  }

  /** Resolves with the first log entry (already recorded or arriving) that matches, or undefined after `ms`. */
  waitForLog(match: (l: RecordedLog) => boolean, ms: number): Promise<RecordedLog | undefined> {
    const found = this.logs.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => {
      const waiter = {
        match,
        resolve: (l: RecordedLog | undefined) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(undefined);
      }, ms);
      this.#waiters.push(waiter as never);
    });
  }
}
