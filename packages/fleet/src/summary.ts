// What a finished task reports, read from its session files: the final answer, the spend
// and tokens of every session it ran (its sub-agents' included: the task's state directory
// holds nothing else), its turns and denied calls; and its status and exit code, as
// `agent run -p` would end (0 completed, 1 failed, 3 a bound, 4 cancelled or denied).
import { fromBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema, ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { openSessionReader } from "@pluggableharness/state";
import { sessionFilesIn } from "./snapshot.ts";

// Synthetic assistant messages that are not the model's answer (as in the headless printer).
const NOT_AN_ANSWER = /^(attempt_failed:|turn_failed$|compaction_summary$)/;

export interface SessionSummary {
  readonly finalMessage: string;
  readonly costUsd: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly turns: number;
  readonly denials: number;
}

const quiet = { log: () => {} } as const;

/** Spend and tokens over every session file in `stateDir`. */
export function ledgerTotals(stateDir: string): {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
} {
  let costUsd = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for (const id of sessionFilesIn(stateDir)) {
    const reader = openSessionReader(id, { dir: stateDir, ...quiet });
    try {
      for (const row of reader.costLedger()) {
        costUsd += row.costUsd;
        inputTokens += row.inputTokens + row.cacheReadTokens + row.cacheWriteTokens;
        outputTokens += row.outputTokens;
      }
    } finally {
      reader.close();
    }
  }
  return { costUsd, inputTokens, outputTokens };
}

export function summarizeTask(stateDir: string, rootId: string): SessionSummary {
  const reader = openSessionReader(rootId, { dir: stateDir, ...quiet });
  let finalMessage = "";
  const turns = new Set<string>();
  let denials = 0;
  try {
    for (const e of reader.events({ kinds: [EventKind.MESSAGE] })) {
      if (e.producer.category !== PluginCategory.KERNEL) continue;
      const m = fromBinary(MessageEventSchema, e.payload);
      if (!m.message || m.message.role !== Role.ASSISTANT || NOT_AN_ANSWER.test(m.syntheticReason)) continue;
      turns.add(m.turnId);
      const text = m.message.content
        .flatMap((b) =>
          b.block.case === "text" && b.block.value.text.trim() !== "" ? [b.block.value.text] : [],
        )
        .join("\n\n");
      if (text.trim() !== "") finalMessage = text;
    }
    for (const e of reader.events({ kinds: [EventKind.TOOL_RESULT] })) {
      if (fromBinary(ToolResultEventSchema, e.payload).denied) denials++;
    }
  } finally {
    reader.close();
  }
  return { finalMessage, ...ledgerTotals(stateDir), turns: turns.size, denials };
}

/** The exit status `agent run -p` would have ended the session with. */
export function exitCodeOf(status: SessionStatus, denials: number): number {
  if (status === SessionStatus.FAILED) return 1;
  if (denials > 0 || status === SessionStatus.CANCELLED) return 4;
  if (
    status === SessionStatus.ERROR_MAX_TURNS ||
    status === SessionStatus.ERROR_MAX_BUDGET_USD ||
    status === SessionStatus.ERROR_MAX_WALL_CLOCK
  )
    return 3;
  return 0;
}

export function statusName(status: SessionStatus): string {
  return (SessionStatus[status] ?? String(status)).toLowerCase();
}
