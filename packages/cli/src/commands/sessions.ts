// `agent sessions list | show | replay | prune`: reading and pruning the session files
// of the state backend. Listing and pruning never launch a plugin; show renders the
// transcript with the kernel's generic renderer; replay re-renders through the
// recorded producers (see replay.ts).

import type { SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import { formatUsd } from "@pluggableharness/provider-tui/describe";
import { listSessions, parseSessionStatus, pruneSessions, sumDescendants } from "@pluggableharness/state";
import { parseDuration } from "../duration.ts";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { liveServers } from "../serve/endpoint.ts";
import { liveness } from "../serve/liveness.ts";
import { resolveSessionId, shortDirectory, shownStatus, startedText as when } from "../session-ids.ts";

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

export interface ListOptions {
  status?: string[];
  roots?: boolean;
  json?: boolean;
  limit?: string;
}

export function runList(io: Io, opts: ListOptions): number {
  const status = parseStatuses(opts.status);
  // One scan of every session: the filters apply to the rows, while a row's tree cost
  // counts its sub-agents whether or not they are listed.
  const listing = listSessions({ log: () => {} });
  const wanted = status ? new Set(status) : undefined;
  const kept = listing.sessions.filter(
    (s) => (!wanted || wanted.has(s.status)) && (!opts.roots || !s.parentSessionId),
  );
  const treeCost = new Map(
    kept.map((s) => [s.sessionId, s.costUsd + sumDescendants(s.sessionId, listing.sessions).usd]),
  );
  let sessions = treeOrder(kept);
  if (opts.limit) sessions = sessions.slice(0, Math.max(0, Number(opts.limit) || 0));
  // Which are live: hosted by `agent serve` (attachable) or open in an `agent run`.
  const servers = liveServers(io.env);
  const live = new Map(sessions.map((s) => [s.sessionId, liveness(s.sessionId, servers)?.kind]));
  if (opts.json) {
    line(
      io.out,
      JSON.stringify(
        sessions.map((s) => ({
          session_id: s.sessionId,
          parent_session_id: s.parentSessionId || null,
          depth: s.depth,
          profile: s.profile,
          status: shownStatus(s),
          started_at: when(s),
          // The session's own calls, and with every sub-agent below it (the spec's roll-up).
          cost_usd: s.costUsd,
          tree_cost_usd: treeCost.get(s.sessionId) ?? s.costUsd,
          working_directory: s.workingDirectory || null,
          title: s.title || null,
          model: s.model || null,
          // true: `model` is the operator's /model choice, which a resume applies.
          model_overridden: s.modelOverridden,
          live: live.get(s.sessionId) ?? null,
        })),
      ),
    );
    return EXIT.OK;
  }
  if (sessions.length === 0 && listing.unreadable.length === 0) {
    line(io.out, "No sessions yet.");
    return EXIT.OK;
  }
  // The title comes last and is cut to what is left of the terminal's width (60 off one).
  const rows = sessions.map((s) => [
    `${s.level > 0 ? `${"  ".repeat(s.level - 1)}└─ ` : ""}${s.sessionId}`,
    when(s),
    shortDirectory(s.workingDirectory, io.env["HOME"] ?? ""),
    s.model || s.profile || "-",
    shownStatus(s),
    live.get(s.sessionId) ?? "-",
    costCell(s.costUsd, treeCost.get(s.sessionId) ?? s.costUsd),
    oneLine(s.title) || "-",
  ]);
  const header = ["ID", "STARTED (UTC)", "DIRECTORY", "MODEL", "STATUS", "LIVE", "COST", "TITLE"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => [...r[i]!].length)));
  const costColumn = 6;
  const titleAt = widths.slice(0, -1).reduce((a, w) => a + w + 2, 0);
  const titleRoom = Math.max(20, (io.out.columns ?? 0) > 0 ? io.out.columns! - titleAt - 1 : 60);
  const fmt = (r: string[]) =>
    r
      .map((c, i) =>
        i === r.length - 1
          ? cut(c, titleRoom)
          : i === costColumn
            ? c.padStart(widths[i]!)
            : c + " ".repeat(Math.max(0, widths[i]! - [...c].length)),
      )
      .join("  ")
      .trimEnd();
  line(io.out, fmt(header));
  for (const r of rows) line(io.out, fmt(r));
  for (const u of listing.unreadable)
    line(io.err, `warning: ${u.sessionId} cannot be read (${u.reason}): ${u.message}`);
  return EXIT.OK;
}

/**
 * The listing as a tree: sessions newest first, each followed by the sub-agents it
 * spawned (oldest first, recursively); a sub-agent whose parent is not listed (filtered
 * out) stands on its own. `level` is the indentation under the listed ancestor.
 */
export function treeOrder(sessions: readonly SessionInfo[]): Array<SessionInfo & { level: number }> {
  const ids = new Set(sessions.map((s) => s.sessionId));
  const kids = new Map<string, SessionInfo[]>();
  for (const s of [...sessions].reverse()) {
    if (!s.parentSessionId || !ids.has(s.parentSessionId)) continue;
    const list = kids.get(s.parentSessionId) ?? [];
    list.push(s);
    kids.set(s.parentSessionId, list);
  }
  const out: Array<SessionInfo & { level: number }> = [];
  const seen = new Set<string>();
  const visit = (s: SessionInfo, level: number) => {
    if (seen.has(s.sessionId)) return;
    seen.add(s.sessionId);
    out.push({ ...s, level });
    for (const c of kids.get(s.sessionId) ?? []) visit(c, level + 1);
  };
  for (const s of sessions) if (!s.parentSessionId || !ids.has(s.parentSessionId)) visit(s, 0);
  return out;
}

/** Own cost, and the tree's beside it when sub-agents spent something. */
function costCell(own: number, tree: number): string {
  return tree > own ? `${formatUsd(own)} (tree ${formatUsd(tree)})` : formatUsd(own);
}

function oneLine(text: string): string {
  return text.replace(/\p{Cc}+/gu, " ").trim();
}

function cut(text: string, room: number): string {
  const chars = [...text];
  return chars.length > room ? `${chars.slice(0, room - 1).join("")}…` : text;
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
