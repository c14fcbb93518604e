// The user tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { askUserTool } from "./ask-user.ts";

await serveTools(new URL("../package.json", import.meta.url), { tools: [askUserTool] });
