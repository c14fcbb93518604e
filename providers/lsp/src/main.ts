// The lsp tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { CONFIG, configure } from "./config.ts";
import { stopAll, TOOLS } from "./tools.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: TOOLS,
  config: CONFIG,
  configure,
  onShutdown: stopAll,
});
