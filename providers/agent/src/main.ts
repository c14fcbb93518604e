// The agent tool provider's executable.
import { serveTools } from "@pluggableharness/tool-kit";
import { spawnProvider } from "./spawn.ts";

await serveTools(new URL("../package.json", import.meta.url), spawnProvider());
