// What the built-in configuration and `agent init` turn on besides the vendor: the
// capabilities a user coming from Claude Code expects without writing any HCL
// (sub-agents with an explorer and a worker profile, memory, git, LSP diagnostics,
// widgets), and the probes that decide the two conditional ones: git tools only in a
// repository, LSP only when the project has a language whose server can be run.
// Decisions: docs/decisions/defaults.md.

import { accessSync, constants, existsSync, readdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import { repositoryTop } from "./git-paths.ts";
import type { Environment } from "./secrets.ts";

/** The built-in sub-agent profiles: name -> what the model is told it is for. */
export const SUBAGENT_PROFILES: Readonly<Record<string, string>> = {
  explorer: "reads and searches the project (never changes anything) and reports what it finds",
  worker: "a general agent with the same tools as this one, for a self-contained task; its changes ask first",
};

/** The explorer's tools: every read-only one of the default providers, nothing that writes. */
export function explorerTools(caps: Capabilities): string[] {
  return [
    "filesystem.read_file",
    "filesystem.list_directory",
    "search.*",
    "web.*",
    ...(caps.git ? ["git.git_status", "git.git_diff", "git.git_log", "git.git_show", "git.git_blame"] : []),
    ...(caps.lsp ? ["lsp.*"] : []),
  ];
}

/** A language whose server the LSP provider can be pointed at. */
interface Language {
  /** Files whose presence at the project's top says the project uses it. */
  markers: readonly string[];
  /** Candidate servers, best first: executable and its command line. */
  servers: readonly (readonly [string, string])[];
  extensions: readonly string[];
}

// TypeScript/JavaScript are not here: the lsp provider bundles their server.
const LANGUAGES: Readonly<Record<string, Language>> = {
  python: {
    markers: ["pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"],
    servers: [
      ["pyright-langserver", "pyright-langserver --stdio"],
      ["basedpyright-langserver", "basedpyright-langserver --stdio"],
      ["pylsp", "pylsp"],
    ],
    extensions: [".py", ".pyi"],
  },
  go: { markers: ["go.mod"], servers: [["gopls", "gopls"]], extensions: [".go"] },
  rust: { markers: ["Cargo.toml"], servers: [["rust-analyzer", "rust-analyzer"]], extensions: [".rs"] },
  c: {
    markers: ["compile_commands.json", "CMakeLists.txt", ".clangd"],
    servers: [["clangd", "clangd"]],
    extensions: [".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh"],
  },
};

const TS_MARKERS = ["package.json", "tsconfig.json", "jsconfig.json", "deno.json"];

export interface LspSetup {
  /** language -> server command line, for the provider's `servers` map. */
  servers: Record<string, string>;
  /** extension -> language, for the provider's `extensions` map. */
  extensions: Record<string, string>;
  /** Every language found, TypeScript/JavaScript included (for messages). */
  languages: string[];
}

export interface Capabilities {
  /** The project lies in a git repository. */
  git: boolean;
  /** How to run the LSP provider here, or undefined when no language of the project has a server. */
  lsp: LspSetup | undefined;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where an executable is: the project's own tool directories first, then PATH. */
function findServer(name: string, projectDir: string, env: Environment): boolean {
  const dirs = [
    join(projectDir, "node_modules", ".bin"),
    join(projectDir, ".venv", "bin"),
    join(projectDir, "venv", "bin"),
    ...(env["PATH"] ?? "").split(delimiter).filter((d) => d !== ""),
  ];
  return dirs.some((d) => executable(join(d, name)));
}

function topNames(dir: string): Set<string> {
  try {
    return new Set(readdirSync(dir));
  } catch {
    return new Set();
  }
}

/** The language servers this project can use: its languages, each with a server found. */
export function detectLsp(projectDir: string, env: Environment): LspSetup | undefined {
  const names = topNames(projectDir);
  const has = (markers: readonly string[]) => markers.some((m) => names.has(m));
  const setup: LspSetup = { servers: {}, extensions: {}, languages: [] };
  if (has(TS_MARKERS)) setup.languages.push("typescript");
  for (const [lang, l] of Object.entries(LANGUAGES)) {
    if (!has(l.markers)) continue;
    const found = l.servers.find(([exe]) => findServer(exe, projectDir, env));
    if (!found) continue;
    setup.servers[lang] = found[1];
    for (const ext of l.extensions) setup.extensions[ext] = lang;
    setup.languages.push(lang);
  }
  return setup.languages.length > 0 ? setup : undefined;
}

/** What the defaults turn on for the project in `projectDir`. */
export function detectCapabilities(projectDir: string, env: Environment): Capabilities {
  return {
    git: existsSync(projectDir) && repositoryTop(projectDir) !== undefined,
    lsp: detectLsp(projectDir, env),
  };
}
