// `agent add <provider>`: adds a first-party or git-forge provider to agent.hcl the way
// `agent mcp add` adds a server: its required_providers entry, a provider block whose
// options are written out commented (each with the description the provider's own schema
// gives), and "<name>.*" in every profile that lists its tools. The provider is launched
// once for its schema and categories, so what is written is what this build offers.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  checkSourceAddress,
  FIRST_PARTY_PROVIDERS,
  firstPartyName,
  firstPartySource,
  formatDiagnostics,
  isForgeSource,
  loadConfigSource,
} from "@pluggableharness/config";
import { writeValue } from "@pluggableharness/hcl";
import { AttributeType, type ConfigAttribute } from "@pluggableharness/protocol/config";
import { EXIT } from "../exit-codes.ts";
import { inspectProviders } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { CliError, type Io, line } from "../io.ts";
import { addProvider, EditError } from "../mcp-edit.ts";
import { projectOf } from "../project.ts";
import { closest } from "../suggest.ts";
import { lockProject } from "./lock.ts";
import { commit } from "./mcp.ts";

export interface AddProviderOptions {
  dir?: string;
  /** The local name for a forge provider (default: its repository's name without "provider-"). */
  name?: string;
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

interface Wanted {
  name: string;
  source: string;
}

/** What `agent add <what>` names: a first-party name or a source address. */
export function wantedProvider(given: string, localName?: string): Wanted {
  // A repository's web address, pasted as is, names the same source.
  const what = given.replace(/^https?:\/\//i, "").replace(/(\.git)?\/*$/i, "");
  if (what === "mcp" || firstPartyName(what) === "mcp") {
    throw new CliError(
      "MCP servers are added with `agent mcp add <name> -- <command>` (or `agent mcp add <name> <url>`)",
      EXIT.USAGE,
    );
  }
  if (!what.includes("/")) {
    if ((FIRST_PARTY_PROVIDERS as readonly string[]).includes(what)) {
      const name = what as (typeof FIRST_PARTY_PROVIDERS)[number];
      return { name: localName ?? name, source: firstPartySource(name) };
    }
    const near = closest(what, FIRST_PARTY_PROVIDERS);
    throw new CliError(
      `agent add: no first-party provider is called "${what}"${near ? `; did you mean "${near}"?` : "."}\n` +
        `  First-party: ${FIRST_PARTY_PROVIDERS.filter((n) => n !== "mcp").join(", ")}.\n` +
        "  Others by address: agent add github.com/<owner>/provider-<name>",
      EXIT.USAGE,
    );
  }
  const bad = checkSourceAddress(what);
  if (bad) throw new CliError(`agent add: ${bad}`, EXIT.USAGE);
  const first = firstPartyName(what);
  if (first) return { name: localName ?? first, source: firstPartySource(first) };
  const repo = what.split("/").at(-1)!;
  const name = localName ?? repo.replace(/^provider-/i, "").toLowerCase();
  if (!NAME.test(name)) {
    throw new CliError(
      `agent add: "${name}" is not a usable local name; give one with --name (letters, digits, - and _)`,
      EXIT.USAGE,
    );
  }
  return { name, source: what };
}

const sameSource = (a: string, b: string) =>
  a.toLowerCase() === b.toLowerCase() ||
  (firstPartyName(a) !== undefined && firstPartyName(a) === firstPartyName(b));

/** The source a required_providers entry already gives `name`, if it has one. */
function existingSource(text: string, file: string, dir: string, name: string): string | undefined {
  const loaded = loadConfigSource(text, file, dir);
  if (!loaded.ok) {
    const errors = loaded.diagnostics.filter((d) => d.severity === "error" && d.category !== "env_unset");
    if (errors.length > 0) {
      throw new CliError(`${formatDiagnostics(errors)}\nagent add: fix agent.hcl first`, EXIT.ERROR);
    }
    return undefined;
  }
  return loaded.config.requiredProviders.find((r) => r.localName === name)?.source;
}

/** The variable a secret option reads: OPENAI_API_KEY for openai's api_key. */
const envName = (provider: string, attr: string) => `${provider}_${attr}`.toUpperCase().replace(/-/g, "_");

/** An example value for an attribute nobody has set: its default, else the empty value of its type. */
function exampleValue(a: ConfigAttribute, provider: string): string {
  if (a.sensitive) return `env(${writeValue(envName(provider, a.name))})`;
  if (a.defaultJson !== undefined) {
    try {
      return writeValue(JSON.parse(a.defaultJson) as never);
    } catch {
      // a default the writer cannot render: fall back to the type's empty value
    }
  }
  if (a.path) return a.type === AttributeType.LIST_STRING ? '["."]' : '"."';
  switch (a.type) {
    case AttributeType.NUMBER:
      return "0";
    case AttributeType.BOOL:
      return "false";
    case AttributeType.LIST_STRING:
    case AttributeType.LIST_NUMBER:
      return "[]";
    case AttributeType.MAP_STRING:
    case AttributeType.OBJECT:
      return "{}";
    default:
      return '""';
  }
}

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let cur = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (cur && cur.length + 1 + word.length > width) {
      out.push(cur);
      cur = word;
    } else cur = cur ? `${cur} ${word}` : word;
  }
  if (cur) out.push(cur);
  return out;
}

/**
 * The provider block: every option commented out with its description and its default
 * (uncommenting a line changes nothing until its value is edited). A required option gets
 * a working value where one is known (a path: the project, a secret: env("NAME")), else it
 * is left for the user and reported.
 */
export function providerBlock(
  name: string,
  attrs: readonly ConfigAttribute[],
): { text: string; toSet: string[]; variables: string[] } {
  const toSet: string[] = [];
  const variables: string[] = [];
  const body: string[] = [];
  for (const a of attrs) {
    if (body.length > 0) body.push("");
    const describe = a.description.trim() || `${a.name}.`;
    for (const l of wrap(describe, 84)) body.push(`  # ${l}`);
    const value = exampleValue(a, name);
    const known = a.sensitive || a.path;
    if (a.required && known) {
      body.push(`  ${a.name} = ${value}`);
      if (a.sensitive) variables.push(envName(name, a.name));
    } else if (a.required) {
      body.push(`  # Required: set it before \`agent run\`.`, `  ${a.name} = ${value}`);
      toSet.push(a.name);
    } else body.push(`  # ${a.name} = ${value}`);
  }
  const text =
    body.length === 0
      ? `provider ${writeValue(name)} {}\n`
      : `provider ${writeValue(name)} {\n${body.join("\n")}\n}\n`;
  return { text, toSet, variables };
}

export async function runAdd(io: Io, what: string, opts: AddProviderOptions): Promise<number> {
  const project = projectOf(io, opts.dir);
  if (project.file === undefined) {
    throw new CliError(`no agent.hcl in ${project.dir} or above it: run \`agent init\` first`, EXIT.ERROR);
  }
  const file = project.file;
  const wanted = wantedProvider(what, opts.name);
  const text = readFileSync(file, "utf8");
  const present = existingSource(text, file, project.dir, wanted.name);
  if (present !== undefined) {
    if (sameSource(present, wanted.source)) {
      line(io.out, `"${wanted.name}" (${present}) is already in ${file}; nothing changed.`);
      return EXIT.OK;
    }
    throw new CliError(
      `agent add: "${wanted.name}" already names ${present} in ${file}; pick another with --name`,
      EXIT.ERROR,
    );
  }

  // Described from a copy with only its required_providers entry: its schema and categories
  // decide the block and whether profiles get its tools.
  let bare: ReturnType<typeof addProvider>;
  try {
    bare = addProvider(text, file, { ...wanted, block: "", tools: false });
  } catch (err) {
    if (err instanceof EditError) throw new CliError(err.message, EXIT.ERROR);
    throw err;
  }
  const probe = loadConfigSource(bare.text, file, project.dir);
  if (!probe.ok) throw new CliError(formatDiagnostics(probe.diagnostics), EXIT.ERROR);
  const resolution = await resolveProject(io, project.dir, probe.config, {
    mode: "use",
    only: [wanted.name],
  });
  const target = resolution.resolved.find((r) => r.localName === wanted.name);
  if (!target) {
    const problems = resolution.diagnostics.filter((d) => d.severity === "error");
    throw new CliError(
      `${formatDiagnostics(problems)}\nagent add: ${wanted.source} could not be resolved; agent.hcl was left unchanged`,
      EXIT.ERROR,
    );
  }
  const [facts] = await inspectProviders(probe.config, [target], { env: io.env });
  if (!facts || facts.error !== undefined) {
    throw new CliError(
      `agent add: ${wanted.source} could not be started to read its options: ${facts?.error ?? "no answer"}; agent.hcl was left unchanged`,
      EXIT.ERROR,
    );
  }
  const isTool = facts.categories.includes("tool");
  const block = providerBlock(wanted.name, facts.configSchema?.attributes ?? []);
  let edited: ReturnType<typeof addProvider>;
  try {
    edited = addProvider(text, file, { ...wanted, block: block.text, tools: isTool });
  } catch (err) {
    if (err instanceof EditError) throw new CliError(err.message, EXIT.ERROR);
    throw err;
  }
  commit(io, file, edited.text);
  line(io.out, `Added provider "${wanted.name}" (${wanted.source}) to ${file}.`);
  line(io.out, `  It serves: ${facts.categories.join(", ") || "nothing it declared"}.`);
  for (const p of edited.profiles) line(io.out, `  agent_profile "${p}" now lists "${wanted.name}.*".`);
  if (block.toSet.length > 0)
    line(io.out, `  Set ${block.toSet.join(", ")} in its provider block before \`agent run\`.`);
  const unset = block.variables.filter((v) => (io.env[v] ?? "") === "");
  if (unset.length > 0) line(io.out, `  Set ${unset.join(", ")} in your environment before \`agent run\`.`);
  line(
    io.out,
    "  Its options are in its provider block, commented out; check the file with `agent validate`.",
  );
  // A project that keeps a lock file gets the new entry in it, as `agent providers lock` would;
  // so does a forge provider, just downloaded and verified: its checksums are recorded now.
  if (isForgeSource(wanted.source) || existsSync(join(project.dir, ".agent", "agent.lock.hcl"))) {
    const after = loadConfigSource(edited.text, file, project.dir);
    if (after.ok) return lockProject(io, project.dir, after.config, "lock");
  }
  return EXIT.OK;
}
