// The MCP bridge's executable: one process per configured MCP server.
import { serve } from "@pluggableharness/plugin-sdk";
import { bridgeService, shutdown } from "./service.ts";

await serve({
  packageJson: new URL("../package.json", import.meta.url),
  services: [bridgeService()],
  onShutdown: shutdown,
});
