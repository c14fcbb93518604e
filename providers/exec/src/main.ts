// The exec tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { BACKGROUND_TOOLS } from "./background.ts";
import { bashTool } from "./bash.ts";
import { CONFIG, configure } from "./config.ts";
import { killAll } from "./process.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [bashTool, ...BACKGROUND_TOOLS],
  config: CONFIG,
  configure,
  onShutdown: killAll,
});
