// The web tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { CONFIG, configure } from "./config.ts";
import { webFetchTool } from "./fetch-tool.ts";
import { webSearchTool } from "./search-tool.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [webFetchTool, webSearchTool],
  config: CONFIG,
  configure,
});
