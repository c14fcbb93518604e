// Consistent copies of a running session's SQLite files. The kernel keeps writing while
// a worker uploads, so the bytes of the file on disk (and its WAL beside it) may be caught
// mid-transaction; VACUUM INTO through a read-only connection writes one self-contained
// file holding exactly the last committed state, whatever the writer does meanwhile.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { UploadedFile } from "./types.ts";

const SESSION_FILE = /^([0-9A-HJKMNP-TV-Z]{26})\.sqlite$/;

/** Every session file in `stateDir` (the task's root session and its sub-agents'). */
export function sessionFilesIn(stateDir: string): string[] {
  try {
    return readdirSync(stateDir)
      .map((n) => SESSION_FILE.exec(n)?.[1])
      .filter((id): id is string => id !== undefined)
      .sort();
  } catch {
    return [];
  }
}

/** Copies of the session files in `stateDir`, read consistently. */
export function snapshotSessions(stateDir: string, rootId: string): UploadedFile[] {
  const scratch = mkdtempSync(join(tmpdir(), "fleet-snap-"));
  try {
    return sessionFilesIn(stateDir).map((id) => {
      const out = join(scratch, `${id}.sqlite`);
      const db = new DatabaseSync(join(stateDir, `${id}.sqlite`), { readOnly: true });
      try {
        db.exec("PRAGMA busy_timeout = 5000");
        db.exec(`VACUUM INTO '${out.replaceAll("'", "''")}'`);
      } finally {
        db.close();
      }
      return { sessionId: id, isRoot: id === rootId, bytes: readFileSync(out) };
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
