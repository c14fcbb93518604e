// Crash-test child: appends events to one session in an endless loop and reports every
// append that RETURNED on stdout, one line each ("<index> <sequence>"), until the test
// kills it with SIGKILL. Payloads are derived from the index so the test can check them.
//
// argv: <sessions dir> <session id> <first index> <seed> <durability: full | normal>

import { writeSync } from "node:fs";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlanDecision } from "@pluggableharness/protocol/plan";
import { kernelProducer, type NewEvent, openSessionWriter } from "../../src/index.ts";

// Literal wire numbers: importing the kernel/plan enums would load most of the generated
// protocol and slow every one of the many child starts.
const MESSAGE = 1 as EventKind;
const TOOL_RESULT = 3 as EventKind;
const PLAN = 4 as EventKind;
const ALLOW = 2 as PlanDecision;

import { crashPayload, toolProducer } from "../crash-shared.ts";

const [dir, sessionId, first, seedText, durability] = process.argv.slice(2);
if (
  dir === undefined ||
  sessionId === undefined ||
  first === undefined ||
  seedText === undefined ||
  (durability !== "full" && durability !== "normal")
) {
  throw new Error("usage: crash-appender <dir> <session id> <first index> <seed> <full|normal>");
}
let seed = Number(seedText) >>> 0;
const random = () => {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed / 2 ** 32;
};

function eventFor(index: number): NewEvent {
  const shape = index % 4;
  const payload = crashPayload(index);
  if (shape === 0) {
    return {
      kind: MESSAGE,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload,
      costs: [
        { providerName: "anthropic", modelId: "m", inputTokens: index, outputTokens: 1, costUsd: 0.001 },
      ],
    };
  }
  if (shape === 1) {
    return {
      kind: PLAN,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload,
      planItems: [
        {
          turnId: "t",
          toolCallId: `c${index}`,
          providerName: "fs",
          toolName: "write",
          decision: ALLOW,
          decidedBy: "rule",
        },
      ],
    };
  }
  return { kind: TOOL_RESULT, producer: toolProducer(index), schemaVersion: "1", payload };
}

const writer = openSessionWriter(sessionId, { dir, durability });
writeSync(1, "ready\n");
for (let index = Number(first); ; ) {
  if (random() < 0.3) {
    const n = 1 + Math.floor(random() * 8);
    const events = Array.from({ length: n }, (_, k) => eventFor(index + k));
    const done = writer.appendBatch(events);
    writeSync(1, done.map((d, k) => `${index + k} ${d.sequence}\n`).join(""));
    index += n;
  } else {
    const done = writer.append(eventFor(index));
    writeSync(1, `${index} ${done.sequence}\n`);
    index++;
  }
}
