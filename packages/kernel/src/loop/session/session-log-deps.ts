// What the session log (session-log.ts) reads and writes of its session, and nothing
// more: session.ts hands it these parts, so the log never names the Session class.
import type { SessionWriter } from "@pluggableharness/state";
import type { SessionChannel } from "../../frontends/channel.ts";
import type { LoopDeps } from "../deps.ts";
import type { ConversationPort } from "../ports.ts";
import type { CostNode } from "../turn/bounds.ts";
import type { CompactionState } from "../turn/compaction.ts";

/** What one model served a kernel's runs of a session cost ("<provider>/<model>" keys). */
export interface ModelUsage {
  provider: string;
  modelId: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  costUsd: number;
}

export interface SessionLogDeps {
  /** The session's id, for the log lines. */
  readonly id: string;
  readonly writer: Pick<
    SessionWriter,
    "append" | "appendBatch" | "costUsd" | "sync" | "hold" | "holding" | "closed" | "commit"
  >;
  readonly channel: Pick<SessionChannel, "publish" | "publishPersisted">;
  readonly deps: Pick<LoopDeps, "log" | "kernelProducer" | "newId">;
  /** Context usage for the usage updates (compaction.ts owns it). */
  readonly compaction: Pick<CompactionState, "contextUsage">;
  readonly cost: Pick<CostNode, "charge" | "remainingUsd">;
  readonly usageByModel: Map<string, ModelUsage>;
  /** Where a recorded user message enters the conversation. */
  readonly conversation: Pick<ConversationPort, "append">;
}
