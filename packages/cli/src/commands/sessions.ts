// `agent sessions list | show | replay | prune`: reading and pruning the session files
// of the state backend. Listing and pruning never launch a plugin; show renders the
// transcript with the kernel's generic renderer; replay re-renders through the
// recorded producers (see replay.ts).

import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import { formatUsd, statusName } from "@pluggableharness/provider-tui/describe";
import { listSessions, parseSessionStatus, pruneSessions } from "@pluggableharness/state";
import { parseDuration } from "../duration.ts";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { isLive, resolveSessionId } from "../session-ids.ts";

export const STATUS_NAMES = [
  "running",
  "completed",
  "error_max_turns",
  "error_max_budget_usd",
  "error_max_wall_clock",
  "cancelled",
  "failed",
];

export function parseStatuses(
  values: readonly string[] | undefined,
  flag = "--status",
): SessionStatus[] | undefined {
  if (!values || values.length === 0) return undefined;
  return values
    .flatMap((v) => v.split(","))
    .map((v) => {
      const s = parseSessionStatus(v.trim());
      if (!s) throw new CliError(`${flag}: "${v}" is not a status (${STATUS_NAMES.join(", ")})`, EXIT.USAGE);
      return s;
    });
}

function when(info: SessionInfo): string {
  const ts = info.startedAt;
  if (!ts) return "-";
  const d = new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6));
  return d.toISOString().replace("T", " ").slice(0, 19);
}

/** A status as the list shows it: RUNNING without a live kernel is "interrupted". */
function shownStatus(info: SessionInfo): string {
  if (info.status === SessionStatus.RUNNING && !isLive(info.sessionId)) return "interrupted";
  return statusName(info.status);
}

export interface ListOptions {
  status?: string[];
  roots?: boolean;
  json?: boolean;
  limit?: string;
}

export function runList(io: Io, opts: ListOptions): number {
  const status = parseStatuses(opts.status);
  const listing = listSessions({
    ...(status ? { status } : {}),
    ...(opts.roots ? { rootsOnly: true } : {}),
    log: () => {},
  });
  let sessions = listing.sessions;
  if (opts.limit) sessions = sessions.slice(0, Math.max(0, Number(opts.limit) || 0));
  if (opts.json) {
    line(
      io.out,
      JSON.stringify(
        sessions.map((s) => ({
          session_id: s.sessionId,
          parent_session_id: s.parentSessionId || null,
          profile: s.profile,
          status: shownStatus(s),
          started_at: when(s),
          cost_usd: s.costUsd,
        })),
      ),
    );
    return EXIT.OK;
  }
  if (sessions.length === 0 && listing.unreadable.length === 0) {
    line(io.out, "No sessions yet.");
    return EXIT.OK;
  }
  const rows = sessions.map((s) => [
    `${s.depth > 0 ? `${"  ".repeat(s.depth)}↳ ` : ""}${s.sessionId}`,
    when(s),
    s.profile || "-",
    shownStatus(s),
    formatUsd(s.costUsd),
  ]);
  const header = ["ID", "STARTED (UTC)", "PROFILE", "STATUS", "COST"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  line(io.out, fmt(header));
  for (const r of rows) line(io.out, fmt(r));
  for (const u of listing.unreadable)
    line(io.err, `warning: ${u.sessionId} cannot be read (${u.reason}): ${u.message}`);
  return EXIT.OK;
}

export interface PruneOptions {
  olderThan?: string;
  status?: string[];
  includeRunning?: boolean;
  includeCorrupt?: boolean;
  dryRun?: boolean;
}

export function runPrune(io: Io, ids: string[], opts: PruneOptions): number {
  const status = parseStatuses(opts.status);
  if (ids.length === 0 && !opts.olderThan && !status) {
    throw new CliError(
      "agent sessions prune deletes only what it is told to: name session ids, or select with --older-than and/or --status",
      EXIT.USAGE,
    );
  }
  const olderThan = opts.olderThan
    ? new Date(Date.now() - parseDuration(opts.olderThan, "--older-than") * 1000)
    : undefined;
  const result = pruneSessions({
    ...(ids.length > 0 ? { ids: ids.map(resolveSessionId) } : {}),
    ...(olderThan ? { olderThan } : {}),
    ...(status ? { status } : {}),
    ...(opts.includeRunning ? { includeRunning: true } : {}),
    ...(opts.includeCorrupt ? { includeCorrupt: true } : {}),
    ...(opts.dryRun ? { dryRun: true } : {}),
  });
  const verb = result.dryRun ? "would delete" : "deleted";
  for (const d of result.deleted) line(io.out, `${verb} ${d.sessionId}`);
  for (const s of result.skipped) line(io.out, `kept ${s.sessionId}: ${s.reason}`);
  line(
    io.out,
    `${result.deleted.length} session${result.deleted.length === 1 ? "" : "s"} ${verb}${result.dryRun ? " (dry run)" : ""}`,
  );
  return EXIT.OK;
}
