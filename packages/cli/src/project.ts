// The project a command works on, kept apart from the directory it was started in: the
// project directory holds agent.hcl, `.agent/` (approvals, memory) and the lock file, and
// is what roots, protected paths and the sandbox are about; the working directory is where
// a session's relative paths and commands start. `-C/--dir` names where to start looking.
import { resolve } from "node:path";
import { findProjectDir, type ProjectLocation } from "@pluggableharness/config";
import type { Io } from "./io.ts";

export interface Project extends ProjectLocation {
  /** The directory the command was started in (or `-C`'s), where a session works. */
  readonly workingDir: string;
}

/** The project of `io.cwd` (or of `dirOption`, relative to it). */
export function projectOf(io: Io, dirOption?: string): Project {
  const workingDir = resolve(io.cwd, dirOption ?? ".");
  return { ...findProjectDir(workingDir), workingDir };
}

/** Whether the agent.hcl was found above the working directory (worth telling the user). */
export function foundAbove(p: Project): boolean {
  return p.file !== undefined && p.dir !== p.workingDir;
}
