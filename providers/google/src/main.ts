// The Google Gemini model-provider plugin process.
import { serveModelProvider } from "@pluggableharness/model-kit";
import { adapter } from "./adapter.ts";

await serveModelProvider(adapter);
