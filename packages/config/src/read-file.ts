// Reading a configuration file from disk: its bytes, or the one io diagnostic that says
// why they could not be read (the project's agent.hcl and the global file alike).
import { readFileSync } from "node:fs";
import { type ConfigDiagnostic, fileDiag } from "./diagnostics.ts";

export type ReadResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly diagnostics: ConfigDiagnostic[] };

/** `summary` names the file's role in the diagnostic ("Cannot read configuration"). */
export function readConfigFile(file: string, summary: string): ReadResult {
  try {
    return { ok: true, bytes: readFileSync(file) };
  } catch (e) {
    return { ok: false, diagnostics: [fileDiag("error", "io", file, summary, (e as Error).message)] };
  }
}
