// The lsp provider's agent.hcl block: which language server serves which files.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { SANDBOX_MODES, type SandboxMode } from "@pluggableharness/runtime/sandbox";
import {
  type ConfigField,
  configError,
  type Diagnostic,
  integerAtLeast,
  Jail,
  type ReadRules,
  readRuleFields,
  readRulesFrom,
  rootsField,
} from "@pluggableharness/tool-kit";

export const CONFIG: readonly ConfigField[] = [
  rootsField(
    "Project roots (relative ones from the directory of agent.hcl): a file must lie inside one, and the root " +
      "holding it is the language server's workspace. Without roots: the call's working directory.",
  ),
  {
    name: "servers",
    type: "map_string",
    description:
      'Language server command line per language, e.g. { python = "pyright-langserver --stdio" }. ' +
      '"typescript" defaults to the bundled typescript-language-server.',
  },
  {
    name: "extensions",
    type: "map_string",
    description:
      'More file extensions per language, e.g. { ".py" = "python" } (TypeScript and JavaScript ones are built in).',
  },
  {
    name: "timeout_ms",
    type: "number",
    default: 30_000,
    description:
      "Deadline of a server's start-up (initialize), of each request and of waiting for diagnostics.",
  },
  {
    name: "sandbox",
    type: "string",
    default: "best_effort",
    description:
      "The OS sandbox (bubblewrap) each language server runs in, read-only and without network (a server " +
      "runs code the project controls: its own TypeScript, plugins named in its configuration): " +
      '"required" (refuse to start a server without it), "best_effort" (start it unconfined where it cannot ' +
      'work, and say so once), or "off".',
  },
  {
    name: "settle_ms",
    type: "number",
    default: 400,
    description:
      "How long a server must be quiet after publishing diagnostics before they are taken as final.",
  },
  ...readRuleFields("lsp"),
];

export const BUILTIN_EXTENSIONS: Readonly<Record<string, string>> = {
  ".ts": "typescript",
  ".tsx": "typescript",
  ".mts": "typescript",
  ".cts": "typescript",
  ".js": "typescript",
  ".jsx": "typescript",
  ".mjs": "typescript",
  ".cjs": "typescript",
};

/**
 * The typescript-language-server this package depends on, run on the plugin's own Node,
 * and the initialization options pointing it at this package's TypeScript (a project's own
 * node_modules/typescript is preferred by the server when it has one).
 */
export function bundledTypeScriptServer(): { argv: string[]; initializationOptions: JsonObject } {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("typescript-language-server/package.json");
  const tsserver = require.resolve("typescript/lib/tsserver.js");
  return {
    argv: [process.execPath, join(dirname(pkg), "lib", "cli.mjs"), "--stdio"],
    initializationOptions: { tsserver: { fallbackPath: tsserver } },
  };
}

/** Splits a command line on blanks; single or double quotes keep blanks in a word. */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out.push(m[1] ?? m[2] ?? m[3]!);
  return out;
}

export interface Settings {
  jail: Jail | undefined;
  /** Credential stores no file is read from, with roots or without (tool-kit credentials.ts). */
  readRules: ReadRules | undefined;
  servers: Record<string, string[]>;
  extensions: Record<string, string>;
  timeoutMs: number;
  settleMs: number;
  sandbox: SandboxMode;
}

export let settings: Settings = {
  jail: undefined,
  readRules: undefined,
  servers: {},
  extensions: { ...BUILTIN_EXTENSIONS },
  timeoutMs: 30_000,
  settleMs: 400,
  sandbox: "best_effort",
};

export async function configure(values: JsonObject): Promise<Diagnostic[]> {
  const problems: Diagnostic[] = [];
  const num = (name: string, min: number) => integerAtLeast(values, problems, name, min);
  const timeoutMs = num("timeout_ms", 100);
  const settleMs = num("settle_ms", 0);
  const sandbox = values["sandbox"] as SandboxMode;
  if (!SANDBOX_MODES.includes(sandbox))
    problems.push(configError(["sandbox"], `sandbox must be one of ${SANDBOX_MODES.join(", ")}`));
  const servers: Record<string, string[]> = {};
  for (const [lang, line] of Object.entries(
    (values["servers"] as Record<string, string> | undefined) ?? {},
  )) {
    const argv = splitCommand(line);
    if (argv.length === 0)
      problems.push(configError(["servers", lang], `the ${lang} server command is empty`));
    else servers[lang] = argv;
  }
  const extensions: Record<string, string> = { ...BUILTIN_EXTENSIONS };
  for (const [ext, lang] of Object.entries(
    (values["extensions"] as Record<string, string> | undefined) ?? {},
  )) {
    if (!/^\.[A-Za-z0-9_.+-]+$/.test(ext))
      problems.push(
        configError(["extensions", ext], `not a file extension: ${ext} (write it with its dot, e.g. ".py")`),
      );
    extensions[ext.toLowerCase()] = lang;
  }
  for (const lang of new Set(Object.values(extensions))) {
    if (lang !== "typescript" && !servers[lang])
      problems.push(
        configError(["extensions"], `no server is configured for language ${lang} (add it to servers)`),
      );
  }
  // A language server is handed the whole text of the files it is asked about.
  const read = readRulesFrom(values, {
    home: process.env["HOME"],
    env: process.env,
    setting: "allow_read in the lsp provider block",
  });
  problems.push(...read.problems);
  let jail: Jail | undefined;
  const roots = values["roots"] as string[] | undefined;
  if (roots && roots.length > 0 && problems.length === 0) {
    try {
      jail = await Jail.create(roots, { readRules: read.rules });
    } catch (err) {
      problems.push(configError(["roots"], "Invalid root", (err as Error).message));
    }
  }
  if (problems.length > 0) return problems;
  settings = { jail, readRules: read.rules, servers, extensions, timeoutMs, settleMs, sandbox };
  return [];
}
