// plugin.GRPCController: the host asks the plugin to exit. go-plugin's own Empty
// message (not google.protobuf.Empty) is the request and the response.
import { GRPCController } from "@pluggableharness/protocol/goplugin";
import { implement } from "./server.ts";

/** Handlers that answer Shutdown first and then run `onShutdown` (which may exit). */
export function controllerHandlers(onShutdown: () => void) {
  return implement(GRPCController, {
    shutdown: () => {
      // Let the response reach the host before tearing the server down.
      setImmediate(onShutdown);
      return {};
    },
  });
}
