// FrontendService.Attach served by the kernel: a frontend plugin dials it on the
// go-plugin broker connection (next to KernelCallbackService) and gets a connection of
// the kernel's FrontendPort. The stream is only an adapter: ClientEvents in become
// send(), the connection's ServerEvents are written out, and either side ending ends both.
import type { handleBidiStreamingCall, ServerDuplexStream } from "@grpc/grpc-js";
import type { ClientEvent, ServerEvent } from "@pluggableharness/protocol/frontend";
import type { KernelLogger } from "../log.ts";
import type { FrontendPort } from "../loop/frontend-port.ts";

export function attachHandler(
  port: FrontendPort,
  name: string,
  log: KernelLogger,
): handleBidiStreamingCall<ClientEvent, ServerEvent> {
  return (call: ServerDuplexStream<ClientEvent, ServerEvent>) => {
    // A plugin frontend stands for a human at a terminal (or window).
    const conn = port.connect({ name, interactive: true });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      conn.close();
    };
    call.on("data", (event: ClientEvent) => conn.send(event));
    call.on("end", () => {
      finish();
    });
    call.on("cancelled", finish);
    call.on("error", finish);
    void (async () => {
      try {
        for await (const event of conn.events) {
          if (call.cancelled) break;
          if (!call.write(event)) await new Promise<void>((resolve) => call.once("drain", resolve));
        }
      } catch (err) {
        log.warn("Attach stream failed", { frontend: name, error: (err as Error).message });
      } finally {
        finish();
        if (!call.cancelled) call.end();
      }
    })();
  };
}
