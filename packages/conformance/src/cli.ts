// The `agent conform` command body: parse arguments, run the checks, print one line per
// check, return the exit code (0 conformant, 1 violations, 2 could not check).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { formatReport, formatResult, runConformance, type SampleCall } from "./index.ts";

export const USAGE = `usage: agent conform <plugin-executable> [options]

Launches the plugin the way the kernel does and checks it against the protocol rules
of each category it serves (tool, model, context, memory, hook, frontend, widget) and
of the slash commands it declares. Exit status: 0 conformant, 1 violations found,
2 could not check.

options:
  --config <file.json>     values for Configure (the provider block, decoded)
  --config-json <json>     the same, inline
  --samples <file.json>    tool calls to make: [{"tool", "arguments", "expect"?, "cancel"?}]
  --model <id>             model id for model-provider checks
  --workdir <dir>          working directory for calls (default: a fresh temporary one);
                           "\${workdir}" in config and sample strings is replaced by it
  --isolation <how>        process (default: a go-plugin subprocess, as every plugin can run)
                           or worker (a worker thread, as first-party JavaScript plugins run)
  --json                   print the report as JSON instead of lines`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
};

function readJson(path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`cannot read ${what} from ${path}: ${(err as Error).message}`);
  }
}

export async function main(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  let executable: string | undefined;
  let config: JsonObject | undefined;
  let samples: SampleCall[] | undefined;
  let model: string | undefined;
  let workdir: string | undefined;
  let json = false;
  let isolation: "process" | "worker" | undefined;
  try {
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!;
      const value = () => {
        const v = argv[++i];
        if (v === undefined) throw new Error(`${arg} needs a value`);
        return v;
      };
      switch (arg) {
        case "-h":
        case "--help":
          io.out(USAGE);
          return 0;
        case "--config":
          config = readJson(value(), "the configuration") as JsonObject;
          break;
        case "--config-json":
          config = JSON.parse(value()) as JsonObject;
          break;
        case "--samples":
          samples = readJson(value(), "samples") as SampleCall[];
          break;
        case "--model":
          model = value();
          break;
        case "--workdir":
          workdir = resolve(value());
          break;
        case "--json":
          json = true;
          break;
        case "--isolation": {
          const v = value();
          if (v !== "process" && v !== "worker")
            throw new Error(`--isolation must be process or worker, not ${JSON.stringify(v)}`);
          isolation = v;
          break;
        }
        default:
          if (arg.startsWith("-") || executable)
            throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
          executable = resolve(arg);
      }
    }
    if (!executable) throw new Error("missing the plugin executable");
    if (config !== undefined && (config === null || typeof config !== "object" || Array.isArray(config))) {
      throw new Error("the configuration must be a JSON object");
    }
    if (samples !== undefined && !Array.isArray(samples)) throw new Error("samples must be a JSON array");
  } catch (err) {
    io.err(`agent conform: ${(err as Error).message}`);
    io.err(USAGE);
    return 2;
  }
  const report = await runConformance({
    executable,
    ...(config ? { config } : {}),
    ...(samples ? { samples } : {}),
    ...(model ? { model } : {}),
    ...(workdir ? { workingDirectory: workdir } : {}),
    ...(isolation ? { isolation } : {}),
    ...(json ? {} : { onResult: (r) => io.out(formatResult(r)) }),
  });
  if (json) io.out(JSON.stringify(report, null, 2));
  else for (const line of formatReport(report, true).split("\n")) io.out(line);
  return report.exitCode;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
