// Per-step time of the scripted task, the harness's own share of each turn. Two views:
// - from the fake (every harness): a model request received in full → the first byte of
//   the next one. The fake answers a step at once (one short tool call), so this is the
//   harness reading the answer, running the tool and building and sending the next request.
// - from ours' AGENT_TRACE timeline: the kernel's model.stream_end → the next model.attempt,
//   minus the tool's own run (tool.invoke → tool.invoked): what the kernel itself adds per
//   step (persisting, gate, hooks, history, context assembly), with the tool and the model
//   provider's HTTP work left out.
import { existsSync, readFileSync } from "node:fs";
import type { RecordedRequest } from "@pluggableharness/fake-vendors";
import { nsToMs } from "./stats.ts";

/** Gaps between consecutive model requests as the fake saw them, in ms. */
export function requestGaps(requests: readonly RecordedRequest[]): number[] {
  const gaps: number[] = [];
  for (let i = 0; i + 1 < requests.length; i++)
    gaps.push(nsToMs(requests[i + 1]!.receivedAt.hrtime - requests[i]!.bodyCompleteAt.hrtime));
  return gaps;
}

export interface KernelStep {
  /** model.stream_end → next model.attempt. */
  readonly betweenMs: number;
  /** The tool calls' own time inside it (their invoke → invoked spans, merged when they overlap). */
  readonly toolMs: number;
  /** betweenMs − toolMs: the kernel's overhead of the step. */
  readonly overheadMs: number;
}

interface TraceLine {
  t: number;
  name: string;
  attrs?: { callId?: string };
}

/** The kernel's steps of one traced run (AGENT_TRACE file); [] when the file is missing. */
export function kernelSteps(traceFile: string): KernelStep[] {
  if (!existsSync(traceFile)) return [];
  const lines = readFileSync(traceFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TraceLine);
  const steps: KernelStep[] = [];
  let streamEnd: number | undefined;
  let spans: [number, number][] = [];
  const started = new Map<string, number>();
  for (const l of lines) {
    if (l.name === "model.stream_end") {
      streamEnd = l.t;
      spans = [];
    } else if (l.name === "tool.invoke" && l.attrs?.callId) started.set(l.attrs.callId, l.t);
    else if (l.name === "tool.invoked" && l.attrs?.callId) {
      const from = started.get(l.attrs.callId);
      if (from !== undefined) spans.push([from, l.t]);
    } else if (l.name === "model.attempt" && streamEnd !== undefined) {
      const toolMs = mergedLength(spans);
      const betweenMs = l.t - streamEnd;
      steps.push({ betweenMs, toolMs, overheadMs: betweenMs - toolMs });
      streamEnd = undefined;
    }
  }
  return steps;
}

/** Total length of possibly overlapping intervals. */
function mergedLength(spans: [number, number][]): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [from, to] of sorted) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}
