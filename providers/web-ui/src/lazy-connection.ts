// A frontend connection whose Attach stream is opened on first use. The web UI's
// Configure must not need the kernel's callback socket: `agent validate` configures
// providers without one, and a browser may never connect at all.
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import type { ClientEventInit, FrontendConnection } from "./connection.ts";

export function lazyConnection(open: () => Promise<FrontendConnection>): FrontendConnection {
  let conn: FrontendConnection | undefined;
  let closed = false;
  const queued: ClientEventInit[] = [];
  const ready = open().then((c) => {
    conn = c;
    if (closed) c.close();
    else for (const e of queued.splice(0)) c.send(e);
    return c;
  });
  // An unused connection whose dial failed must not surface as an unhandled rejection.
  ready.catch(() => {});
  return {
    events: (async function* (): AsyncGenerator<ServerEvent> {
      yield* (await ready).events;
    })(),
    send(event) {
      if (conn) conn.send(event);
      else if (!closed) queued.push(event);
    },
    close() {
      closed = true;
      conn?.close();
    },
  };
}
