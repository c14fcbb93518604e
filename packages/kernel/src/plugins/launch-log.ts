// AGENT_DEBUG_LAUNCH_LOG=<file>: every provider launched (by the kernel, or by `agent
// validate` / `agent providers` describing it) appends its name to the file, one a line.
// How tests see what a command started; a debugging aid, never an error.
import { appendFileSync } from "node:fs";

export function noteLaunch(env: NodeJS.ProcessEnv, name: string): void {
  const file = env["AGENT_DEBUG_LAUNCH_LOG"];
  if (!file) return;
  try {
    appendFileSync(file, `${name}\n`);
  } catch {
    // a debugging aid only
  }
}
