// Which process runs a session right now: a served kernel (attachable), another
// `agent run` (its terminal owns it), or nobody. The session's writer lock names the
// holder's pid; a served kernel's record names its own.
import { assertNoOtherWriter, SessionLockedError } from "@pluggableharness/state";
import type { ServerRecord } from "./endpoint.ts";

export type Liveness =
  | { readonly kind: "serve"; readonly server: ServerRecord }
  | { readonly kind: "run"; readonly pid: number | undefined }
  | undefined;

export function liveness(sessionId: string, servers: readonly ServerRecord[]): Liveness {
  try {
    assertNoOtherWriter(sessionId);
    return undefined;
  } catch (err) {
    if (!(err instanceof SessionLockedError)) return undefined;
    const pid = err.holder?.pid;
    const server = servers.find((s) => s.pid === pid);
    return server ? { kind: "serve", server } : { kind: "run", pid };
  }
}
