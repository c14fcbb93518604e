// @pluggableharness/state — the kernel's state backend: one SQLite file per session.

export {
  type DescendantCost,
  descendantCost,
  type ListOptions,
  listSessions,
  type PrunedSession,
  type PruneResult,
  type PruneSelector,
  pruneSessions,
  type ScanOptions,
  type SessionListing,
  type SessionTreeNode,
  sessionChildren,
  sessionTree,
  sumDescendants,
  type UnreadableReason,
  type UnreadableSession,
} from "./catalog.ts";
export {
  applyRewind,
  CHECKPOINTS_SUFFIX,
  type Checkpoint,
  CheckpointStore,
  checkpointsDir,
  type FileChange,
  forkCheckpoints,
  planRewind,
  type RewindAction,
  type RewindStep,
} from "./checkpoints.ts";
export {
  eventKindText,
  parseEventKind,
  parsePlanDecision,
  parsePluginCategory,
  parseSessionStatus,
  planDecisionText,
  pluginCategoryText,
  STORABLE_EVENT_KINDS,
  sessionStatusText,
} from "./codes.ts";
export {
  AsyncTransactionError,
  InvalidArgumentError,
  InvalidEventKindError,
  InvalidStatusTransitionError,
  type LockHolder,
  NotASessionFileError,
  SchemaTooNewError,
  SessionExistsError,
  SessionLockedError,
  SessionNotFoundError,
  SessionUnreadableError,
  StateError,
  type StateErrorCode,
  StoreClosedError,
  WriterAlreadyOpenError,
} from "./errors.ts";
export { costEntriesFromMessage, planItemEntriesFromPlan } from "./ledger.ts";
export { LOCK_SUFFIX, OWNER_SUFFIX, readLockHolder } from "./lock.ts";
export {
  type StateLogCode,
  type StateLogEntry,
  type StateLogger,
  type StateLogLevel,
  stderrLogger,
} from "./log.ts";
export { REOPENABLE_STATUSES, REPLAY_ONLY_STATUSES, titleFromPrompt } from "./meta.ts";
export {
  CORRUPT_SUFFIX,
  defaultSessionsDir,
  isSessionId,
  newUlid,
  SESSION_FILE_SUFFIX,
  sessionFilePath,
  UNREADABLE_SUFFIX,
} from "./paths.ts";
export { hookErrorProducer, KERNEL_PRODUCER_NAME, kernelProducer } from "./producer.ts";
export {
  type EventRange,
  type MissingProducersOptions,
  openSessionReader,
  replaySession,
  SessionReader,
} from "./reader.ts";
export type { RecoveryReport, TableSalvage, UnreadableFlag } from "./recover.ts";
export {
  applySessionRewind,
  findAnchor,
  firstLine,
  planSessionRewind,
  type RewindAnchor,
  RewindError,
  type RewindErrorCode,
  type RewindPlan,
  type RewindResult,
  type RewindSource,
  rewindAnchors,
  rewindSource,
} from "./rewind.ts";
export { CURRENT_SCHEMA_VERSION, type MigrationStepResult } from "./schema.ts";
export { DEFAULT_BUSY_TIMEOUT_MS, type Durability } from "./sqlite.ts";
export type {
  AppendedEvent,
  CostEntry,
  CostLedgerRow,
  NewEvent,
  NewSession,
  PlanItemEntry,
  PlanItemRow,
  ProducerIdentity,
  ProducerRecord,
  SessionMeta,
  StateOptions,
  StoredEvent,
  WriterOptions,
} from "./types.ts";
export {
  assertNoOtherWriter,
  createSession,
  openSessionWriter,
  SessionWriter,
  tidySessionFile,
} from "./writer.ts";
