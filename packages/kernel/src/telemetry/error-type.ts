// The `error.type` a failed span carries, in the spec's vocabulary where one fits: a plugin
// that crashed is `process_crashed` (agent-loop/error-recovery.md), a passed deadline
// `timeout`, a cancelled call `cancelled`; another failed plugin call is named by its status
// (`permission_denied`, `unavailable`, ...). Model, tool and hook failures that the kernel
// has already classified are recorded with their own category instead (genai.ts,
// tool-exec.ts, hooks/dispatcher.ts).
import { ProviderCallError, ProviderStatus, ProviderUnavailableError } from "../providers/ports.ts";

const STATUS_NAMES = new Map<number, string>(
  Object.entries(ProviderStatus).map(([name, code]) => [code, name.toLowerCase()]),
);

export function errorType(err: unknown): string {
  if (err instanceof ProviderUnavailableError)
    return err.reason === "crashed" ? "process_crashed" : "launch_failed";
  if (err instanceof ProviderCallError) {
    if (err.code === ProviderStatus.DEADLINE_EXCEEDED) return "timeout";
    return STATUS_NAMES.get(err.code) ?? "unknown";
  }
  if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError"))
    return err.name === "AbortError" ? "cancelled" : "timeout";
  return "kernel_error";
}
