// The operator's settings of one session as they stand now: plan mode, the /model choice,
// and what resuming had to change. A leaf holder: session-settings.ts is its one writer
// (each change is recorded there for a resume), a sub-agent copies its parent's plan mode
// at spawn, and everything else only reads it.
import type { ModelCandidate } from "../ports.ts";

export class SettingsState {
  planMode = false;
  /** The operator's /model choice: the next turns use it ahead of the profile's chain. */
  modelOverride: ModelCandidate | undefined;
  /** What resuming had to change in the settings the file recorded. */
  resumeWarnings: readonly string[] = [];
}
