// Typed errors of the state backend. Every error carries a stable `code` so callers
// (the kernel, the CLI, the frontend protocol's error taxonomy) can classify it
// without parsing messages.
import { CodedError } from "@pluggableharness/protocol/coded-error";

export type StateErrorCode =
  | "invalid_argument"
  | "invalid_event_kind"
  | "invalid_status_transition"
  | "schema_too_new"
  | "not_a_session_file"
  | "session_not_found"
  | "session_exists"
  | "session_unreadable"
  | "writer_already_open"
  | "session_locked"
  | "store_closed"
  | "async_transaction";

export class StateError extends CodedError<StateErrorCode> {
  override name = "StateError";
}

/** A caller handed the storage layer a value it cannot store (empty name, negative token count, ...). */
export class InvalidArgumentError extends StateError {
  constructor(message: string) {
    super("invalid_argument", message);
    this.name = "InvalidArgumentError";
  }
}

/** EVENT_KIND_UNSPECIFIED or a number outside the EventKind enum: never written to a session file. */
export class InvalidEventKindError extends StateError {
  readonly kind: number;
  constructor(kind: number) {
    super(
      "invalid_event_kind",
      kind === 0
        ? "event kind is EVENT_KIND_UNSPECIFIED: the caller forgot to set it; unspecified events are never persisted"
        : `event kind ${kind} is not a known EventKind value`,
    );
    this.name = "InvalidEventKindError";
    this.kind = kind;
  }
}

/** A session_meta status change the lifecycle rules forbid. */
export class InvalidStatusTransitionError extends StateError {
  readonly from: string;
  readonly to: string;
  /** True when `from` is a replay-only status that can never change again. */
  readonly fromTerminal: boolean;
  constructor(from: string, to: string, fromTerminal: boolean, why: string) {
    super("invalid_status_transition", `session status cannot change from "${from}" to "${to}": ${why}`);
    this.name = "InvalidStatusTransitionError";
    this.from = from;
    this.to = to;
    this.fromTerminal = fromTerminal;
  }
}

/** The file was written by a newer kernel (PRAGMA user_version above what this build knows). */
export class SchemaTooNewError extends StateError {
  readonly path: string;
  readonly fileVersion: number;
  readonly supportedVersion: number;
  constructor(path: string, fileVersion: number, supportedVersion: number) {
    super(
      "schema_too_new",
      `session file ${path} has schema version ${fileVersion}, newer than the ${supportedVersion} this kernel understands; refusing to open it (upgrade the agent to read it)`,
    );
    this.name = "SchemaTooNewError";
    this.path = path;
    this.fileVersion = fileVersion;
    this.supportedVersion = supportedVersion;
  }
}

/** A SQLite file that carries no session schema (user_version 0 with foreign tables, or no session_meta row). */
export class NotASessionFileError extends StateError {
  readonly path: string;
  constructor(path: string, why: string) {
    super("not_a_session_file", `${path} is not a session file: ${why}`);
    this.name = "NotASessionFileError";
    this.path = path;
  }
}

export class SessionNotFoundError extends StateError {
  readonly sessionId: string;
  constructor(sessionId: string, path: string) {
    super("session_not_found", `session ${sessionId} has no file at ${path}`);
    this.name = "SessionNotFoundError";
    this.sessionId = sessionId;
  }
}

export class SessionExistsError extends StateError {
  readonly sessionId: string;
  constructor(sessionId: string, path: string) {
    super("session_exists", `session ${sessionId} already has a file at ${path}`);
    this.name = "SessionExistsError";
    this.sessionId = sessionId;
  }
}

/** The file failed its integrity check and could not be salvaged; it is flagged and skipped. */
export class SessionUnreadableError extends StateError {
  readonly path: string;
  constructor(path: string, why: string, options?: ErrorOptions) {
    super("session_unreadable", `session file ${path} is unreadable: ${why}`, options);
    this.name = "SessionUnreadableError";
    this.path = path;
  }
}

/** The kernel is the sole writer: this process already holds a writer for the file. */
export class WriterAlreadyOpenError extends StateError {
  readonly path: string;
  constructor(path: string) {
    super("writer_already_open", `a session writer for ${path} is already open in this process`);
    this.name = "WriterAlreadyOpenError";
    this.path = path;
  }
}

/** Who holds a session's writer lock, as its owner file says. */
export interface LockHolder {
  readonly pid: number;
  /** ISO-8601 instant the holder took the lock. */
  readonly since: string;
  readonly host: string;
}

/** Another process holds the session's writer lock: one writer per session file. */
export class SessionLockedError extends StateError {
  readonly sessionId: string;
  /** Undefined when the holder had not yet written who it is. */
  readonly holder: LockHolder | undefined;
  constructor(sessionId: string, holder: LockHolder | undefined) {
    super(
      "session_locked",
      holder
        ? `session ${sessionId} is open in another agent process (pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ""}, since ${holder.since}); a session has one writer at a time: end that process first, or read it with \`agent sessions show ${sessionId}\``
        : `session ${sessionId} is open in another agent process; a session has one writer at a time: end that process first, or read it with \`agent sessions show ${sessionId}\``,
    );
    this.name = "SessionLockedError";
    this.sessionId = sessionId;
    this.holder = holder;
  }
}

export class StoreClosedError extends StateError {
  constructor(what: string) {
    super("store_closed", `${what} is closed`);
    this.name = "StoreClosedError";
  }
}

/** transaction() got a callback that returned a promise: an await inside would let other appends join it. */
export class AsyncTransactionError extends StateError {
  constructor() {
    super(
      "async_transaction",
      "transaction callbacks must be synchronous; the transaction was rolled back because the callback returned a promise",
    );
    this.name = "AsyncTransactionError";
  }
}
