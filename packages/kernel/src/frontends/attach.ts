// FrontendService.Attach served by the kernel: a frontend plugin dials it on the
// go-plugin broker connection (next to KernelCallbackService) and gets a connection of
// the kernel's FrontendPort. The stream is only an adapter: ClientEvents in become
// send(), the connection's ServerEvents are written out, and either side ending ends both.
import { type handleBidiStreamingCall, type ServerDuplexStream, status } from "@grpc/grpc-js";
import type { ClientEvent, ServerEvent } from "@pluggableharness/protocol/frontend";
import type { CallbackPeer } from "@pluggableharness/runtime";
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

/** The categories that act for the model or feed it (runtime/categories.ts). */
const MODEL_SIDE = ["tool", "model", "context", "memory"] as const;

/** Why `peer` may not attach to sessions, or undefined when it may. */
export function attachRefusal(peer: CallbackPeer): string | undefined {
  if (!peer.producers.has("frontend"))
    return `plugin "${peer.plugin}" is not a frontend; only frontends attach to sessions`;
  // A plugin says itself what it serves. One that also sits on the model's path (its tools,
  // its vendor, what it reads) acts for the model, and a tool plugin is sandboxed for that:
  // claiming to be a frontend too must not let it approve the model's calls.
  const other = MODEL_SIDE.find((c) => peer.producers.has(c));
  if (other !== undefined)
    return `plugin "${peer.plugin}" serves ${other} too; a frontend that attaches to sessions may not`;
  return undefined;
}

/**
 * Attach for a plugin's callback connection: only a plugin that serves FrontendService (as
 * discovery found) and nothing on the model's side stands for a human, so only it may attach
 * and answer permissions; a tool, model or any other plugin is refused before anything flows.
 */
export function frontendsOnly(
  peer: CallbackPeer,
  handler: handleBidiStreamingCall<ClientEvent, ServerEvent>,
): handleBidiStreamingCall<ClientEvent, ServerEvent> {
  return (call) => {
    const refusal = attachRefusal(peer);
    if (refusal === undefined) {
      handler(call);
      return;
    }
    call.emit("error", { code: status.PERMISSION_DENIED, details: refusal });
  };
}
