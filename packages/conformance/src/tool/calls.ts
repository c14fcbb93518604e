// What every tool check shares about the calls it makes: the session they claim, unique
// call ids, the deadline a call gets, and a result kept for the render check. A leaf, so
// the invoke, preview/render and cancel checks import it instead of each other.
import type { JsonObject } from "@bufbuild/protobuf";
import type { ToolSchema } from "@pluggableharness/protocol/tool";
import type { InvokeRun } from "./stream.ts";

export const SESSION_ID = "01CONFORMANCESESSION000000";
const MAX_DEADLINE_MS = 60_000;

let callCounter = 0;
export function nextCallId(): string {
  callCounter += 1;
  return `conformance-${process.pid}-${callCounter}`;
}

export function deadlineFor(schema: ToolSchema | undefined): number {
  const d = schema?.defaultTimeout;
  const ms = d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6) : 30_000;
  return Math.min(Math.max(ms, 1_000), MAX_DEADLINE_MS);
}

export interface CapturedResult {
  tool: string;
  payload: JsonObject;
  run: InvokeRun;
}
