// The search tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { globTool } from "./glob-tool.ts";
import { grepTool } from "./grep-tool.ts";
import { CONFIG, configure } from "./state.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [globTool, grepTool],
  config: CONFIG,
  configure,
});
