// The git tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { CHANGE_TOOLS } from "./change.ts";
import { CONFIG, configure } from "./config.ts";
import { READ_TOOLS } from "./read.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [...READ_TOOLS, ...CHANGE_TOOLS],
  config: CONFIG,
  configure,
});
