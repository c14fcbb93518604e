// Plugin entry point: serves the OpenAI-compatible model provider over go-plugin's protocol.
import { serveModelProvider } from "@pluggableharness/model-kit";
import { adapter } from "./adapter.ts";

await serveModelProvider(adapter);
