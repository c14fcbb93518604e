// The smallest useful plugin: one tool provider with a unary and a streaming method.
// The benchmark times its cold start and pushes events through its Invoke stream.
import { serve, service } from "@pluggableharness/plugin-sdk";
import { OutputStream, ToolService } from "@pluggableharness/protocol/tool";

await serve({
  packageJson: new URL("./package.json", import.meta.url),
  services: [
    service(ToolService, {
      getSchema: () => ({ tools: [{ name: "stream" }] }),
      async *invoke(req, ctx) {
        const args = req.call?.arguments ?? {};
        const events = Number(args["events"] ?? 0);
        const size = Number(args["bytes"] ?? 100);
        // `batch` logical events share one message: their bytes are coalesced.
        const batch = Math.max(1, Number(args["batch"] ?? 1));
        const data = new Uint8Array(size * batch).fill(120);
        for (let sent = 0; sent < events && !ctx.signal.aborted; sent += batch) {
          const n = Math.min(batch, events - sent);
          const chunk = n === batch ? data : data.subarray(0, size * n);
          yield {
            event: {
              event: { case: "outputChunk", value: { stream: OutputStream.STDOUT, data: chunk } },
            },
          };
        }
        yield { event: { event: { case: "result", value: { payload: { events } } } } };
      },
    }),
  ],
});
