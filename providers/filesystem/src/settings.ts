// The settings Configure accepted last, read by every tool call. Kept apart from
// configure() (state.ts), which recovers journals through transaction.ts, so the tools
// can read the settings without importing the module that configures them.
import { type Jail, ToolFailure } from "@pluggableharness/tool-kit";

export interface Settings {
  jail: Jail;
  maxReadBytes: number;
  maxFileBytes: number;
  maxImageBytes: number;
}

let current: Settings | undefined;

/** Replaces the settings once Configure accepted new values. */
export function useSettings(s: Settings): void {
  current = s;
}

export function settings(): Settings {
  if (!current) {
    throw new ToolFailure(
      "permission_denied",
      "the filesystem provider has no configured roots, so no path is allowed",
    );
  }
  return current;
}
