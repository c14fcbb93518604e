// A connection that exists before its kernel does. The CLI paints the UI first and creates
// the kernel and the session behind it; until the real connection arrives, what the UI
// sends is kept in order and its event stream simply waits. If the connection never comes
// (the kernel failed to start), the stream ends and the UI finishes.
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import type { ClientEventInit, FrontendConnection } from "./connection.ts";

export function pendingConnection(later: Promise<FrontendConnection>): FrontendConnection {
  let real: FrontendConnection | undefined;
  let closed = false;
  const queued: ClientEventInit[] = [];
  const arrived = later.then(
    (conn) => {
      if (closed) {
        conn.close();
        return undefined;
      }
      real = conn;
      for (const e of queued.splice(0)) conn.send(e);
      return conn;
    },
    // The kernel's own error is reported by whoever created it; here the stream just ends.
    () => undefined,
  );
  return {
    events: {
      async *[Symbol.asyncIterator](): AsyncIterator<ServerEvent> {
        const conn = await arrived;
        if (!conn) return;
        yield* conn.events;
      },
    },
    send(event) {
      if (closed) return;
      if (real) real.send(event);
      else queued.push(event);
    },
    close() {
      closed = true;
      queued.length = 0;
      real?.close();
    },
  };
}
