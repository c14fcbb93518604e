// The session tree as the terminal UI shows it: the sub-agents running under the attached
// session (from the kernel's SessionTreeUpdate events, which reach the root for every
// descendant), each with what it is doing, its turns and its spend, kept in the live area
// while it runs; a line in the scrollback when one starts and when it ends.
import type {
  ServerEvent_RequestOrigin,
  ServerEvent_SessionTreeUpdate,
} from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { formatUsd, isTerminal, statusName } from "./describe.ts";
import { type Painter, sanitize } from "./style.ts";

export interface SubagentEntry {
  readonly id: string;
  readonly parentId: string;
  profile: string;
  depth: number;
  title: string;
  activity: string;
  turns: number;
  costUsd: number;
  status: SessionStatus;
  detail: string;
}

export interface TreeChange {
  readonly entry: SubagentEntry;
  /** First news of this child. */
  readonly started: boolean;
  /** It reached a terminal status with this update. */
  readonly ended: boolean;
}

const MAX_LIVE = 8;

function oneLine(text: string, max: number): string {
  const flat = sanitize(text.replace(/\s*\n\s*/g, " ")).trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export class SubagentTree {
  readonly #entries = new Map<string, SubagentEntry>();

  update(u: ServerEvent_SessionTreeUpdate): TreeChange {
    let entry = this.#entries.get(u.childSessionId);
    const started = entry === undefined;
    const wasTerminal = entry !== undefined && isTerminal(entry.status);
    if (!entry) {
      entry = {
        id: u.childSessionId,
        parentId: u.parentSessionId,
        profile: u.profile,
        depth: u.depth,
        title: u.title,
        activity: "",
        turns: 0,
        costUsd: 0,
        status: u.status,
        detail: "",
      };
      this.#entries.set(entry.id, entry);
    }
    entry.profile = u.profile || entry.profile;
    entry.depth = u.depth || entry.depth;
    entry.title = u.title || entry.title;
    entry.activity = u.activity;
    entry.turns = u.turns;
    entry.costUsd = u.costUsd;
    entry.status = u.status;
    entry.detail = u.detail;
    return { entry, started, ended: !wasTerminal && isTerminal(u.status) };
  }

  running(): SubagentEntry[] {
    return [...this.#entries.values()].filter((e) => e.status === SessionStatus.RUNNING);
  }

  get(id: string): SubagentEntry | undefined {
    return this.#entries.get(id);
  }

  /** Forget everything (another session was attached). */
  clear(): void {
    this.#entries.clear();
  }

  /** One row per running sub-agent, indented by depth, for the live area. */
  liveLines(p: Painter, width: number): string[] {
    const running = this.running();
    const rows = running.slice(0, MAX_LIVE).map((e) => {
      const indent = "  ".repeat(Math.max(0, e.depth - 1));
      const what = e.activity || "thinking";
      const stats = `${e.turns} turn${e.turns === 1 ? "" : "s"} · ${formatUsd(e.costUsd)}`;
      const head = `${indent}↳ ${e.profile}`;
      // The task's title takes what is left of the row.
      const room = Math.max(12, width - [...head].length - [...what].length - stats.length - 9);
      return `${p.paint(head, "accent")} · ${oneLine(what, 80)} · ${p.paint(stats, "dim")} · ${p.paint(oneLine(e.title, room), "dim")}`;
    });
    if (running.length > MAX_LIVE)
      rows.push(p.paint(`  … and ${running.length - MAX_LIVE} more sub-agents`, "dim"));
    return rows;
  }

  /** The scrollback line for a child that started or ended. */
  changeLine(change: TreeChange, p: Painter): string | undefined {
    const e = change.entry;
    const indent = "  ".repeat(Math.max(0, e.depth - 1));
    if (change.ended) {
      const ok = e.status === SessionStatus.COMPLETED;
      const mark = ok
        ? p.paint("✓", "success")
        : p.paint("✗", e.status === SessionStatus.CANCELLED ? "dim" : "error");
      const detail = !ok && e.detail ? ` (${oneLine(e.detail, 120)})` : "";
      return `${indent}${mark} sub-agent ${p.paint(e.profile, "bold")} ${statusName(e.status)} · ${e.turns} turn${e.turns === 1 ? "" : "s"} · ${formatUsd(e.costUsd)}${detail} ${p.paint(e.id, "dim")}`;
    }
    if (change.started) {
      return `${indent}${p.paint("↳", "accent")} sub-agent ${p.paint(e.profile, "bold")} started: ${oneLine(e.title, 160)} ${p.paint(e.id, "dim")}`;
    }
    return undefined;
  }
}

/** "sub-agent explorer" (and its depth) for a request a child sent through the root. */
export function originLabel(origin: ServerEvent_RequestOrigin | undefined): string | undefined {
  if (!origin) return undefined;
  return `sub-agent ${origin.profile}${origin.depth > 1 ? ` (depth ${origin.depth})` : ""}`;
}
