// The filesystem tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { editFileTool, multiEditTool, writeFileTool } from "./change.ts";
import { listDirectoryTool } from "./list.ts";
import { applyPatchTool, editFilesTool } from "./multi.ts";
import { notebookEditTool } from "./notebook.ts";
import { readFileTool } from "./read.ts";
import { CONFIG, configure } from "./state.ts";

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [
    readFileTool,
    writeFileTool,
    editFileTool,
    multiEditTool,
    applyPatchTool,
    editFilesTool,
    notebookEditTool,
    listDirectoryTool,
  ],
  config: CONFIG,
  configure,
});
