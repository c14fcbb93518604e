// The exec tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { bashTool } from "./bash.ts";
import { CONFIG, configure } from "./config.ts";
import { killAll } from "./process.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [bashTool],
  config: CONFIG,
  configure,
  onShutdown: killAll,
});
