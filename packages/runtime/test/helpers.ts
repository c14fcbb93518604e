// Shared helpers for the runtime's subprocess tests.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { ProducerRefSchema } from "@pluggableharness/protocol/common";
import { KernelCallbackService } from "@pluggableharness/protocol/kernel";
import type { CallbackPeer, CallbackRegistration, PluginLogRecord } from "../src/index.ts";

export function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

/** True while `pid` is a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return true; // no /proc (macOS): kill(0) succeeded
  }
}

/** Polls until `pid` is gone or `ms` passes; returns whether it is gone. */
export async function waitGone(pid: number, ms = 3_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !isAlive(pid);
}

export interface RecordedCall {
  peer: CallbackPeer;
  method: string;
  sessionId?: string;
}

/** A KernelCallbackService that records who called, as seen from the connection. */
export function recordingCallbacks(
  calls: RecordedCall[],
): CallbackRegistration<typeof KernelCallbackService> {
  let sequence = 0n;
  return {
    service: KernelCallbackService,
    implementation: (peer) => ({
      emit: (req) => {
        calls.push({ peer, method: "emit", sessionId: req.sessionId });
        sequence += 1n;
        return { id: `evt-${peer.plugin}-${sequence}`, sequence };
      },
      log: (req) => {
        calls.push({ peer, method: "log", ...(req.sessionId ? { sessionId: req.sessionId } : {}) });
        return {};
      },
      countTokens: () => {
        calls.push({ peer, method: "countTokens" });
        return { count: 42n, exact: false };
      },
      runSession: (req) => {
        calls.push({ peer, method: "runSession", sessionId: req.parentSessionId });
        return { sessionId: "child-session" };
      },
      describe: () => ({
        producer: create(ProducerRefSchema, { name: "kernel", version: "0.0.0" }),
      }),
    }),
  };
}

export function collectLogs(): { records: PluginLogRecord[]; sink: (r: PluginLogRecord) => void } {
  const records: PluginLogRecord[] = [];
  return { records, sink: (r) => records.push(r) };
}
