// Starts a fake vendor for manual trials: prints its URL on the first stdout line, then logs
// each request (credentials masked) on stderr until interrupted.
//
//   node testing/fake-vendors/src/cli.ts [--port 8787] [--vendor combined] [--text "OK"]
//        [--chunks 4] [--script responses.json [--repeat-last]] [--delay-ms 0] [--latency-ms 0]
//        [--validate] [--prompt-cache] [--api-key KEY] [--quiet]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type ServerVendor, VENDOR_IDS } from "./router.ts";
import * as scenarios from "./scenarios.ts";
import { startFakeVendor } from "./server.ts";
import type { Script, ScriptedResponse } from "./types.ts";

const USAGE = `usage: fake-vendor [--port N] [--host H] [--vendor combined|${VENDOR_IDS.join("|")}]
                   [--text TEXT] [--chunks N] [--script FILE.json] [--repeat-last]
                   [--delay-ms N] [--latency-ms N] [--validate] [--prompt-cache] [--api-key KEY] [--quiet]`;

function fail(message: string): never {
  process.stderr.write(`fake-vendor: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function int(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    fail(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return n;
}

let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      port: { type: "string" },
      host: { type: "string" },
      vendor: { type: "string" },
      text: { type: "string" },
      chunks: { type: "string" },
      script: { type: "string" },
      "repeat-last": { type: "boolean" },
      "delay-ms": { type: "string" },
      "latency-ms": { type: "string" },
      validate: { type: "boolean" },
      "prompt-cache": { type: "boolean" },
      "api-key": { type: "string" },
      quiet: { type: "boolean" },
      help: { type: "boolean" },
    },
    strict: true,
  }).values;
}
try {
  args = parse();
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const vendor = (args.vendor ?? "combined") as ServerVendor;
if (vendor !== "combined" && !VENDOR_IDS.includes(vendor)) fail(`unknown vendor ${JSON.stringify(vendor)}`);

let script: Script;
if (args.script) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(args.script, "utf8"));
  } catch (err) {
    fail(`cannot read script ${args.script}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(parsed)) fail("a script file must hold a JSON array of scripted responses");
  script = parsed as ScriptedResponse[];
} else {
  const text = args.text ?? "OK";
  const chunks = int("chunks", args.chunks, 1);
  script = () => scenarios.text(text, { chunks });
}

const fake = await startFakeVendor({
  vendor,
  script,
  whenExhausted: args["repeat-last"] ? "repeat-last" : "error",
  host: args.host ?? "127.0.0.1",
  port: int("port", args.port, 0),
  chunkDelayMs: int("delay-ms", args["delay-ms"], 0),
  latencyMs: int("latency-ms", args["latency-ms"], 0),
  validate: args.validate ?? false,
  promptCache: args["prompt-cache"] ?? false,
  apiKey: args["api-key"],
  log: args.quiet ? undefined : (line) => process.stderr.write(`${line}\n`),
});

process.stdout.write(`${fake.url}\n`);
if (!args.quiet) {
  process.stderr.write(`fake-vendor (${vendor}) listening on ${fake.url}\n`);
  if (vendor === "combined") {
    process.stderr.write(
      [
        `  Anthropic:          ANTHROPIC_BASE_URL=${fake.baseUrl("anthropic")}`,
        `  OpenAI (Responses): OPENAI_BASE_URL=${fake.baseUrl("openai-responses")}`,
        `  Gemini:             ${fake.url}/v1beta/models/<model>:streamGenerateContent?alt=sse`,
        `  xAI / Ollama / vLLM / LM Studio / Mistral: ${fake.url}/<vendor>/v1`,
        "",
      ].join("\n"),
    );
  }
}

const stop = () => {
  fake.close().then(() => process.exit(0));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
