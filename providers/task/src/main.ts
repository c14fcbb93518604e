// The task tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { taskCreateTool, taskListTool, taskUpdateTool } from "./tools.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [taskCreateTool, taskUpdateTool, taskListTool],
});
