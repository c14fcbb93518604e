// Cross-session queries and pruning. There is no index file: every query scans the
// sessions directory and reads each file's one session_meta row (plus its cost sum).

import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import { decodeTime } from "ulid";
import { CHECKPOINTS_SUFFIX } from "./checkpoints.ts";
import { STATUS_RUNNING, sessionStatusText } from "./codes.ts";
import { InvalidArgumentError, SessionLockedError, StateError } from "./errors.ts";
import { acquireSessionLock, LOCK_SUFFIX, OWNER_SUFFIX, type SessionLock } from "./lock.ts";
import { stderrLogger } from "./log.ts";
import { readCostUsd, readLastModel, readMeta, toSessionInfo } from "./meta.ts";
import { openSessionFile, readUnreadableFlag } from "./open.ts";
import {
  assertSessionId,
  CORRUPT_SUFFIX,
  isSessionId,
  resolveSessionsDir,
  SESSION_FILE_SUFFIX,
  UNREADABLE_SUFFIX,
} from "./paths.ts";
import type { RecoveryReport } from "./recover.ts";
import { closeQuietly } from "./sqlite.ts";
import type { SessionMeta, StateOptions } from "./types.ts";
import { hasOpenWriter } from "./writer.ts";

export interface ScanOptions extends StateOptions {
  /**
   * Run the full PRAGMA integrity_check on every file, salvaging damaged ones (what an
   * explicit `agent sessions check` wants). Off by default: a listing reads one row per
   * file and reports a file it cannot read as unreadable instead of checking every page.
   */
  readonly integrityCheck?: boolean;
}

export interface ListOptions extends ScanOptions {
  /** Keep only sessions in one of these statuses. */
  readonly status?: SessionStatus | readonly SessionStatus[];
  /** Keep only direct children of this session. */
  readonly parentSessionId?: string;
  /** Keep only sessions without a parent. */
  readonly rootsOnly?: boolean;
}

export type UnreadableReason =
  | "flagged_unreadable"
  | "schema_too_new"
  | "not_a_session_file"
  | "corrupt"
  | "error";

/** A session file a scan could not read; listings report these instead of failing. */
export interface UnreadableSession {
  readonly sessionId: string;
  readonly path: string;
  readonly reason: UnreadableReason;
  readonly message: string;
}

export interface SessionListing {
  /** Newest first (session ids are ULIDs, so id order is creation order). */
  readonly sessions: SessionInfo[];
  readonly unreadable: UnreadableSession[];
  /** Files this scan found damaged and salvaged (only with integrityCheck). */
  readonly recovered: RecoveryReport[];
}

interface ScannedSession {
  readonly meta: SessionMeta;
  readonly info: SessionInfo;
}

interface Scan {
  readonly dir: string;
  readonly sessions: ScannedSession[];
  readonly unreadable: UnreadableSession[];
  readonly recovered: RecoveryReport[];
}

function sessionIdsIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const ids: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(SESSION_FILE_SUFFIX)) continue;
    const id = name.slice(0, -SESSION_FILE_SUFFIX.length);
    if (isSessionId(id)) ids.push(id);
  }
  return ids.sort().reverse();
}

function classify(err: unknown): UnreadableReason {
  if (err instanceof StateError) {
    if (err.code === "schema_too_new") return "schema_too_new";
    if (err.code === "not_a_session_file") return "not_a_session_file";
    if (err.code === "session_unreadable") return "flagged_unreadable";
  }
  const code = (err as { errcode?: unknown } | null)?.errcode;
  if (typeof code === "number" && ((code & 0xff) === 11 || (code & 0xff) === 26)) return "corrupt";
  return "error";
}

function scan(options: ScanOptions, after?: string): Scan {
  const dir = resolveSessionsDir(options.dir);
  const log = options.log ?? stderrLogger;
  const sessions: ScannedSession[] = [];
  const unreadable: UnreadableSession[] = [];
  const recovered: RecoveryReport[] = [];
  for (const sessionId of sessionIdsIn(dir)) {
    // Ids are ULIDs: a session created after `after` sorts after it.
    if (after !== undefined && sessionId <= after) continue;
    const path = join(dir, `${sessionId}${SESSION_FILE_SUFFIX}`);
    const flag = readUnreadableFlag(path);
    if (flag !== undefined) {
      unreadable.push({ sessionId, path, reason: "flagged_unreadable", message: flag.reason });
      continue;
    }
    let db: ReturnType<typeof openSessionFile>["db"] | undefined;
    try {
      const opened = openSessionFile(path, sessionId, "read", {
        log,
        busyTimeoutMs: options.busyTimeoutMs,
        integrityCheck: options.integrityCheck === true,
      });
      db = opened.db;
      if (opened.recovery !== undefined) recovered.push(opened.recovery);
      const meta = readMeta(db, path);
      sessions.push({ meta, info: toSessionInfo(meta, readCostUsd(db), readLastModel(db)) });
    } catch (err) {
      unreadable.push({ sessionId, path, reason: classify(err), message: (err as Error).message });
    } finally {
      closeQuietly(db);
    }
  }
  return { dir, sessions, unreadable, recovered };
}

function statusFilter(status: ListOptions["status"]): ReadonlySet<SessionStatus> | undefined {
  if (status === undefined) return undefined;
  const list = (Array.isArray(status) ? status : [status]) as SessionStatus[];
  for (const s of list) sessionStatusText(s); // rejects UNSPECIFIED and unknown values
  return new Set(list);
}

/** Every session in the directory, newest first, filtered by status / parent / roots only. */
export function listSessions(options: ListOptions = {}): SessionListing {
  const statuses = statusFilter(options.status);
  if (options.parentSessionId !== undefined) assertSessionId(options.parentSessionId);
  const { sessions, unreadable, recovered } = scan(options);
  const kept = sessions.filter(({ meta }) => {
    if (statuses !== undefined && !statuses.has(meta.status)) return false;
    if (options.parentSessionId !== undefined && meta.parentSessionId !== options.parentSessionId)
      return false;
    if (options.rootsOnly && meta.parentSessionId !== undefined) return false;
    return true;
  });
  return { sessions: kept.map((s) => s.info), unreadable, recovered };
}

/** Direct children of a session, in spawn order (oldest first). */
export function sessionChildren(sessionId: string, options: ScanOptions = {}): SessionInfo[] {
  assertSessionId(sessionId);
  return listSessions({ ...options, parentSessionId: sessionId }).sessions.reverse();
}

export interface SessionTreeNode {
  readonly info: SessionInfo;
  /** In spawn order. */
  readonly children: SessionTreeNode[];
}

/** The session and all its descendants, from one directory scan; undefined when the root is not readable. */
export function sessionTree(rootSessionId: string, options: ScanOptions = {}): SessionTreeNode | undefined {
  assertSessionId(rootSessionId);
  const { sessions } = scan(options);
  const byParent = new Map<string, ScannedSession[]>();
  let root: ScannedSession | undefined;
  // Oldest first, so children come out in spawn order.
  for (const s of [...sessions].reverse()) {
    if (s.meta.sessionId === rootSessionId) root = s;
    const parent = s.meta.parentSessionId;
    if (parent === undefined) continue;
    const siblings = byParent.get(parent) ?? [];
    siblings.push(s);
    byParent.set(parent, siblings);
  }
  if (root === undefined) return undefined;
  const seen = new Set<string>();
  const build = (s: ScannedSession): SessionTreeNode => {
    seen.add(s.meta.sessionId);
    const children = (byParent.get(s.meta.sessionId) ?? [])
      .filter((c) => !seen.has(c.meta.sessionId))
      .map(build);
    return { info: s.info, children };
  };
  return build(root);
}

/** What a session's sub-agents spent, from their own files. */
export interface DescendantCost {
  /** Every descendant's own spend, summed. */
  readonly usd: number;
  /** The part spent by descendants created at or after `sinceMs` (all of it without sinceMs). */
  readonly sinceUsd: number;
  readonly sessions: number;
}

/**
 * The spend of every session below `rootSessionId` (children, grandchildren, …). Only
 * files newer than the root are opened: a descendant is always created after its
 * ancestors, and ids sort by creation time.
 */
export function descendantCost(
  rootSessionId: string,
  options: ScanOptions & { readonly sinceMs?: number } = {},
): DescendantCost {
  assertSessionId(rootSessionId);
  const { sessions } = scan(options, rootSessionId);
  return sumDescendants(
    rootSessionId,
    sessions.map((s) => s.info),
    options.sinceMs,
  );
}

/** Sums the descendants of `rootSessionId` found in `sessions` (any order). */
export function sumDescendants(
  rootSessionId: string,
  sessions: readonly SessionInfo[],
  sinceMs?: number,
): DescendantCost {
  const byParent = new Map<string, SessionInfo[]>();
  for (const s of sessions) {
    if (!s.parentSessionId) continue;
    const list = byParent.get(s.parentSessionId) ?? [];
    list.push(s);
    byParent.set(s.parentSessionId, list);
  }
  let usd = 0;
  let sinceUsd = 0;
  let count = 0;
  const seen = new Set<string>([rootSessionId]);
  const stack = [...(byParent.get(rootSessionId) ?? [])];
  while (stack.length > 0) {
    const s = stack.pop()!;
    if (seen.has(s.sessionId)) continue;
    seen.add(s.sessionId);
    count++;
    usd += s.costUsd;
    if (sinceMs === undefined || decodeTime(s.sessionId) >= sinceMs) sinceUsd += s.costUsd;
    stack.push(...(byParent.get(s.sessionId) ?? []));
  }
  return { usd, sinceUsd, sessions: count };
}

export interface PruneSelector {
  /** Exactly these sessions. */
  readonly ids?: readonly string[];
  /** Sessions started before this instant (the id's ULID time when the file cannot be read). */
  readonly olderThan?: Date;
  /** Sessions in one of these statuses (a file that cannot be read never matches). */
  readonly status?: SessionStatus | readonly SessionStatus[];
  /** Also delete matching sessions that are still RUNNING. Off: a running session may have a live writer. */
  readonly includeRunning?: boolean;
  /** Also delete the `.corrupt` originals kept by salvage for the matching sessions. */
  readonly includeCorrupt?: boolean;
  /** Report what would be deleted without deleting. */
  readonly dryRun?: boolean;
}

export interface PrunedSession {
  readonly sessionId: string;
  readonly files: string[];
}

export interface PruneResult {
  readonly dryRun: boolean;
  readonly deleted: PrunedSession[];
  readonly skipped: { readonly sessionId: string; readonly reason: string }[];
}

const SIDECARS = ["-wal", "-shm", "-journal"];

function filesOf(dir: string, sessionId: string, includeCorrupt: boolean): string[] {
  const base = `${sessionId}${SESSION_FILE_SUFFIX}`;
  const files: string[] = [];
  for (const name of readdirSync(dir)) {
    const own =
      name === base ||
      SIDECARS.some((s) => name === base + s) ||
      name === base + UNREADABLE_SUFFIX ||
      name === base + LOCK_SUFFIX ||
      name === base + OWNER_SUFFIX ||
      name === `${base}.salvage` ||
      name === sessionId + CHECKPOINTS_SUFFIX ||
      SIDECARS.some((s) => name === `${base}.salvage${s}`);
    const corrupt = name.startsWith(base + CORRUPT_SUFFIX);
    if (own || (includeCorrupt && corrupt)) files.push(join(dir, name));
  }
  return files.sort();
}

/**
 * Deletes exactly the sessions the selector names — nothing is ever deleted otherwise.
 * Every given criterion must match (they combine with AND), and at least one of ids,
 * olderThan and status is required, so an empty selector cannot wipe the directory.
 */
export function pruneSessions(selector: PruneSelector, options: StateOptions = {}): PruneResult {
  const ids = selector.ids === undefined ? undefined : new Set(selector.ids);
  for (const id of ids ?? []) assertSessionId(id);
  if (selector.olderThan !== undefined && Number.isNaN(selector.olderThan.getTime())) {
    throw new InvalidArgumentError("olderThan must be a valid Date");
  }
  const statuses = statusFilter(selector.status);
  if (ids === undefined && selector.olderThan === undefined && statuses === undefined) {
    throw new InvalidArgumentError("prune needs at least one selector: ids, olderThan or status");
  }
  const dir = resolveSessionsDir(options.dir);
  const dryRun = selector.dryRun === true;
  const result: PruneResult = { dryRun, deleted: [], skipped: [] };
  if (!existsSync(dir)) return result;

  const { sessions } = scan({ ...options, dir });
  const metaById = new Map(sessions.map((s) => [s.meta.sessionId, s.meta]));
  // Every id with any file here, including ones only a .corrupt original is left of.
  const candidates = new Set<string>();
  for (const name of readdirSync(dir)) {
    const id = name.slice(0, 26);
    if (isSessionId(id) && name.startsWith(`${id}${SESSION_FILE_SUFFIX}`)) candidates.add(id);
  }
  for (const sessionId of [...candidates].sort()) {
    const meta = metaById.get(sessionId);
    if (ids !== undefined && !ids.has(sessionId)) continue;
    if (selector.olderThan !== undefined) {
      const started = meta !== undefined ? Date.parse(meta.startedAt) : decodeTime(sessionId);
      if (!(started < selector.olderThan.getTime())) continue;
    }
    if (statuses !== undefined && (meta === undefined || !statuses.has(meta.status))) continue;
    const path = join(dir, `${sessionId}${SESSION_FILE_SUFFIX}`);
    if (hasOpenWriter(path)) {
      result.skipped.push({ sessionId, reason: "this process holds its writer" });
      continue;
    }
    if (meta?.status === STATUS_RUNNING && !selector.includeRunning) {
      result.skipped.push({ sessionId, reason: "still running (pass includeRunning to delete it anyway)" });
      continue;
    }
    const files = filesOf(dir, sessionId, selector.includeCorrupt === true);
    if (files.length === 0) continue; // only a .corrupt original is left and it was not asked for
    // A session another process has open is never deleted under it, whatever its status.
    let lock: SessionLock | undefined;
    try {
      lock = acquireSessionLock(sessionId, path);
    } catch (err) {
      if (!(err instanceof SessionLockedError)) throw err;
      result.skipped.push({
        sessionId,
        reason: err.holder
          ? `open in another process (pid ${err.holder.pid}, since ${err.holder.since})`
          : "open in another process",
      });
      continue;
    }
    const lockFile = path + LOCK_SUFFIX;
    const hadLockFile = files.includes(lockFile);
    try {
      if (!dryRun)
        for (const file of files) if (file !== lockFile) rmSync(file, { force: true, recursive: true });
    } finally {
      // The lock file goes last, by its holder; a dry run leaves it as it found it.
      lock.release({ removeLockFile: !dryRun || !hadLockFile });
    }
    result.deleted.push({ sessionId, files });
  }
  return result;
}
