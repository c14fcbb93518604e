// Loading a project's agent.hcl into an AgentConfig: exactly six top-level block
// types, all diagnostics collected in one pass. Only `agent.hcl` is read; sibling
// *.hcl files are reported as ignored (single-file rule, configuration/README.md).

import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Attribute, type Block, parseFile, type Range } from "@pluggableharness/hcl";
import { type Diags, decodeBody, evalStatic, label, objectEntries, readBool, readString } from "./decode.ts";
import { BUILTIN_CONFIG_FILE, defaultConfigSource, noVendorDiagnostic } from "./defaults.ts";
import {
  type ConfigDiagnostic,
  ConfigError,
  errorAt,
  fileDiag,
  fromHcl,
  hasErrors,
  warningAt,
} from "./diagnostics.ts";
import type { ConfigLogger } from "./global.ts";
import { decodeHookBlock } from "./hooks.ts";
import { mcpSecretDiagnostics } from "./mcp-secrets.ts";
import type {
  AgentConfig,
  AgentProfile,
  HookSubscription,
  PolicyRule,
  ProviderBlock,
  RequiredProvider,
} from "./model.ts";
import { conflictDiagnostics, decodePolicyBlock } from "./policy.ts";
import { decodeProfileBlock, profileReferences } from "./profiles.ts";
import { readConfigFile } from "./read-file.ts";
import type { Environment } from "./secrets.ts";
import { decodeSettingsBlock, defaultSettings } from "./settings.ts";
import { checkSourceAddress, firstPartyName } from "./source-address.ts";

/** The first-party providers that are frontends (settings.default_frontend may name them). */
const FIRST_PARTY_FRONTENDS: ReadonlySet<string> = new Set(["tui", "web-ui"]);

import { didYouMean } from "./suggest.ts";
import { parseConstraints } from "./version.ts";

export const CONFIG_FILE = "agent.hcl";

export const TOP_LEVEL_BLOCKS = [
  "required_providers",
  "provider",
  "policy",
  "agent_profile",
  "hook",
  "settings",
] as const;

export interface LoadOptions {
  /** Used by the built-in default (vendor keys) when there is no agent.hcl. */
  env?: Environment;
  logger?: ConfigLogger;
}

export type LoadResult =
  | { ok: true; config: AgentConfig; warnings: ConfigDiagnostic[] }
  | { ok: false; diagnostics: ConfigDiagnostic[] };

const LOCAL_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Loads `<projectDir>/agent.hcl`, or the built-in default configuration when the
 * project has none.
 */
export function loadProjectConfig(projectDir: string, options: LoadOptions = {}): LoadResult {
  const dir = resolve(projectDir);
  const file = join(dir, CONFIG_FILE);
  if (!existsSync(file)) {
    options.logger?.debug("no agent.hcl; using the built-in default configuration", { dir });
    return defaultConfig(options.env ?? process.env, dir);
  }
  options.logger?.debug("loading configuration", { file });
  const read = readConfigFile(file, "Cannot read configuration");
  if (!read.ok) return { ok: false, diagnostics: read.diagnostics };
  const result = loadConfigSource(read.bytes, file, dir);
  const ignored = siblingHclFiles(dir).map((name) =>
    fileDiag(
      "warning",
      "ignored_file",
      join(dir, name),
      "File not loaded",
      `Only ${CONFIG_FILE} is read; ${name} is ignored (configuration does not merge across files).`,
    ),
  );
  if (!result.ok) return result;
  result.config.warnings.push(...ignored);
  result.warnings.push(...ignored);
  return result;
}

/** Like loadProjectConfig, but throws a ConfigError listing every error. */
export function loadProjectConfigOrThrow(projectDir: string, options: LoadOptions = {}): AgentConfig {
  const r = loadProjectConfig(projectDir, options);
  if (!r.ok) throw new ConfigError(r.diagnostics);
  return r.config;
}

function siblingHclFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith(".hcl") && n !== CONFIG_FILE)
      .sort();
  } catch {
    return [];
  }
}

/**
 * The configuration used when a project has no agent.hcl, or an error saying
 * which variables to set.
 */
export function defaultConfig(env: Environment = process.env, projectDir = process.cwd()): LoadResult {
  const source = defaultConfigSource(env, projectDir);
  if (source === undefined) return { ok: false, diagnostics: [noVendorDiagnostic(env)] };
  return loadConfigSource(source, BUILTIN_CONFIG_FILE, projectDir, "builtin");
}

/** Parses and decodes configuration text. `file` names it in diagnostics. */
export function loadConfigSource(
  source: string | Uint8Array,
  file: string,
  projectDir: string,
  origin: AgentConfig["origin"] = "file",
): LoadResult {
  const parsed = parseFile(source, file);
  const diags: Diags = parsed.diagnostics.map((d) => fromHcl(d, "parse"));
  const top = decodeBody(
    parsed.file.body,
    {
      blocks: {
        required_providers: { labels: 0, single: true },
        provider: { labels: 1 },
        policy: { labels: 1 },
        agent_profile: { labels: 1 },
        hook: { labels: 1 },
        settings: { labels: 0, single: true },
      },
    },
    parsed.file.range,
    CONFIG_FILE,
    diags,
  );
  // decodeBody already reported unknown top-level blocks and attributes; say which are allowed.
  for (const d of diags) {
    if (d.category === "unknown_block" || d.category === "unknown_attribute") {
      d.detail += ` ${CONFIG_FILE} holds only these blocks: ${TOP_LEVEL_BLOCKS.join(", ")}.`;
    }
  }

  const blocksOf = (type: string) => top.blocks.filter((b) => b.type === type);
  const orderOf = new Map(top.blocks.map((b, i) => [b, i]));

  const requiredProviders = decodeRequiredProviders(blocksOf("required_providers")[0], diags);
  const declared = new Map(requiredProviders.map((r) => [r.localName, r]));
  const unknownProvider = (name: string, range: Range, what: string) =>
    diags.push(
      errorAt(
        "unknown_provider",
        "Unknown provider",
        `${what} names "${name}", which is not declared in required_providers${declared.size === 0 ? "" : ` (declared: ${[...declared.keys()].join(", ")})`}.${didYouMean(name, [...declared.keys()])}`,
        range,
      ),
    );

  const providers: ProviderBlock[] = [];
  for (const b of blocksOf("provider")) {
    const { value: name, range } = label(b);
    const dup = providers.find((p) => p.name === name);
    if (dup) {
      diags.push(
        errorAt(
          "duplicate",
          "Duplicate provider block",
          `provider "${name}" is already configured at line ${dup.range.start.line}; v1 supports one instance per provider.`,
          range,
        ),
      );
      continue;
    }
    if (!declared.has(name)) unknownProvider(name, range, "This provider block");
    providers.push({ name, body: b.body, block: b, range, order: orderOf.get(b)! });
  }

  const policies: PolicyRule[] = [];
  blocksOf("policy").forEach((b, i) => {
    const { value: name, range } = label(b);
    const rule = decodePolicyBlock(b, i, { origin: "operator" }, diags);
    const dup = policies.find((p) => p.name === name);
    if (dup) {
      diags.push(
        errorAt(
          "duplicate",
          "Duplicate policy name",
          `A policy named "${name}" already exists at line ${dup.range?.start.line}.`,
          range,
        ),
      );
      return;
    }
    if (rule === undefined) return;
    if (rule.match.provider !== undefined && !declared.has(rule.match.provider)) {
      diags.push(
        warningAt(
          "unknown_provider",
          "Policy names an undeclared provider",
          `policy "${name}" matches provider "${rule.match.provider}", which is not in required_providers, so it can never match.`,
          range,
        ),
      );
    }
    policies.push(rule);
  });
  conflictDiagnostics(policies, diags);

  const profiles: AgentProfile[] = [];
  for (const b of blocksOf("agent_profile")) {
    const { value: name, range } = label(b);
    const dup = profiles.find((p) => p.name === name);
    const profile = decodeProfileBlock(b, diags);
    if (dup) {
      diags.push(
        errorAt(
          "duplicate",
          "Duplicate profile",
          `agent_profile "${name}" is already defined at line ${dup.range?.start.line}.`,
          range,
        ),
      );
      continue;
    }
    if (profile === undefined) continue;
    for (const ref of profileReferences(profile)) {
      if (!declared.has(ref.provider))
        unknownProvider(ref.provider, ref.range, `The ${ref.what} of agent_profile "${name}"`);
    }
    profiles.push(profile);
  }

  const hooks: HookSubscription[] = [];
  for (const b of blocksOf("hook")) {
    const sub = decodeHookBlock(b, orderOf.get(b)!, diags);
    if (sub === undefined) continue;
    if (!declared.has(sub.provider)) unknownProvider(sub.provider, sub.providerRange, `hook "${sub.point}"`);
    const dup = hooks.find((h) => h.point === sub.point && h.provider === sub.provider);
    if (dup) {
      diags.push(
        errorAt(
          "duplicate",
          "Duplicate hook subscription",
          `"${sub.provider}" already subscribes to "${sub.point}" at line ${dup.range.start.line}.`,
          sub.range,
        ),
      );
      continue;
    }
    hooks.push(sub);
  }

  const settingsBlock = blocksOf("settings")[0];
  const settings =
    settingsBlock === undefined ? defaultSettings() : decodeSettingsBlock(settingsBlock, diags);
  const frontendAt = () =>
    settingsBlock?.body.items.find(
      (i): i is Attribute => i.kind === "Attribute" && i.name === "default_frontend",
    );
  const namedFrontend =
    settings.default_frontend === undefined ? undefined : declared.get(settings.default_frontend);
  const firstParty = namedFrontend && firstPartyName(namedFrontend.source);
  if (firstParty !== undefined && !FIRST_PARTY_FRONTENDS.has(firstParty)) {
    // The setting chooses the frontend an interactive run is handed to: naming a model or
    // tool provider would leave the run with none, so it is refused here, not at run time.
    // (A third-party provider's category is known once it runs: `agent run` checks it.)
    diags.push(
      errorAt(
        "invalid_value",
        "Not a frontend provider",
        `settings.default_frontend names "${settings.default_frontend}", the first-party ${firstParty} provider, which is not a frontend; name tui or web-ui, or remove the setting.`,
        frontendAt()?.expr.range ?? settingsBlock!.typeRange,
      ),
    );
  }
  if (settings.default_frontend !== undefined && !declared.has(settings.default_frontend)) {
    const at = frontendAt();
    // A warning, not an error: the name only matters when several frontends load.
    diags.push(
      warningAt(
        "unknown_provider",
        "Unknown default frontend",
        `settings.default_frontend names "${settings.default_frontend}", which is not declared in required_providers.`,
        at?.expr.range ?? settingsBlock!.typeRange,
      ),
    );
  }

  diags.push(...mcpSecretDiagnostics(requiredProviders, providers));

  if (hasErrors(diags)) return { ok: false, diagnostics: diags };
  const warnings = diags.filter((d) => d.severity === "warning");
  const config: AgentConfig = {
    origin,
    file,
    projectDir,
    requiredProviders,
    providers,
    policies,
    profiles,
    hooks,
    settings,
    warnings,
  };
  return { ok: true, config, warnings: [...warnings] };
}

function decodeRequiredProviders(block: Block | undefined, diags: Diags): RequiredProvider[] {
  if (block === undefined) return [];
  const out: RequiredProvider[] = [];
  for (const item of block.body.items) {
    if (item.kind !== "Attribute") {
      diags.push(
        errorAt(
          "unknown_block",
          "Unexpected block",
          `required_providers holds attributes only: write ${item.type} = { source = "...", version = "..." }.`,
          item.typeRange,
        ),
      );
      continue;
    }
    const name = item.name;
    if (!LOCAL_NAME.test(name)) {
      diags.push(
        errorAt(
          "invalid_value",
          "Invalid local name",
          `"${name}" is not a valid provider local name.`,
          item.nameRange,
        ),
      );
      continue;
    }
    const what = `required_providers.${name}`;
    let sourceAttr: Attribute | undefined;
    let versionAttr: Attribute | undefined;
    let isolationAttr: Attribute | undefined;
    let networkAttr: Attribute | undefined;
    if (item.expr.kind === "Object") {
      for (const e of objectEntries(item.expr, what, diags) ?? []) {
        const attr: Attribute = {
          kind: "Attribute",
          name: e.key,
          nameRange: e.keyRange,
          expr: e.value,
          range: e.range,
        };
        if (e.key === "source") sourceAttr = attr;
        else if (e.key === "version") versionAttr = attr;
        else if (e.key === "isolation") isolationAttr = attr;
        else if (e.key === "network") networkAttr = attr;
        else {
          diags.push(
            errorAt(
              "unknown_attribute",
              "Unsupported argument",
              `${what} accepts only "source", "version", "network" and "isolation", not "${e.key}".`,
              e.keyRange,
            ),
          );
        }
      }
    } else {
      const v = evalStatic(item.expr, diags);
      if (v !== undefined) {
        diags.push(
          errorAt(
            "type",
            "Incorrect value type",
            `${what} must be written as an object: { source = "...", version = "..." }.`,
            item.expr.range,
          ),
        );
      }
      continue;
    }
    for (const [key, attr] of [
      ["source", sourceAttr],
      ["version", versionAttr],
    ] as const) {
      if (attr === undefined) {
        diags.push(
          errorAt(
            "missing_attribute",
            "Missing required argument",
            `${what} needs "${key}".`,
            item.nameRange,
          ),
        );
      }
    }
    const source = sourceAttr && readString(sourceAttr, `${what}.source`, diags);
    if (source !== undefined) {
      const problem = checkSourceAddress(source);
      if (problem !== undefined)
        diags.push(errorAt("source_address", "Invalid source address", problem, sourceAttr!.expr.range));
    }
    const version = versionAttr && readString(versionAttr, `${what}.version`, diags);
    let constraints: RequiredProvider["constraints"] | undefined;
    if (version !== undefined) {
      const parsed = parseConstraints(version);
      if ("error" in parsed) {
        diags.push(
          errorAt(
            "version_constraint",
            "Invalid version constraint",
            parsed.error.message,
            offsetInLiteral(versionAttr!.expr.range, version, parsed.error.offset),
          ),
        );
      } else {
        constraints = parsed.constraints;
      }
    }
    const isolation = isolationAttr && readString(isolationAttr, `${what}.isolation`, diags);
    let validIsolation: RequiredProvider["isolation"];
    if (isolation !== undefined) {
      if (isolation !== "process" && isolation !== "worker") {
        diags.push(
          errorAt(
            "invalid_value",
            "Invalid isolation",
            `${what}.isolation must be "process" (its own process) or "worker" (a worker thread of the kernel, first-party providers only), not ${JSON.stringify(isolation)}.`,
            isolationAttr!.expr.range,
          ),
        );
      } else if (isolation === "worker" && source !== undefined && firstPartyName(source) === undefined) {
        diags.push(
          errorAt(
            "invalid_value",
            "Isolation not allowed",
            `${what}: only first-party providers may run in a worker thread; "${source}" always runs as its own process (write isolation = "process" or leave it out).`,
            isolationAttr!.expr.range,
          ),
        );
      } else {
        validIsolation = isolation;
      }
    }
    const network = networkAttr && readBool(networkAttr, `${what}.network`, diags);
    if (source !== undefined && version !== undefined && constraints !== undefined) {
      out.push({
        localName: name,
        source,
        version,
        constraints,
        range: item.nameRange,
        ...(validIsolation ? { isolation: validIsolation, isolationRange: isolationAttr!.expr.range } : {}),
        ...(network !== undefined ? { network } : {}),
      });
    }
  }
  return out;
}

/**
 * The position `offset` characters into a one-line string literal without escapes;
 * the literal's own start otherwise.
 */
function offsetInLiteral(range: Range, text: string, offset: number): Range {
  const sameLine = range.start.line === range.end.line;
  const plain = sameLine && range.end.column - range.start.column === text.length + 2;
  if (!plain) return range;
  const start = {
    ...range.start,
    column: range.start.column + 1 + offset,
    byte: range.start.byte + 1 + offset,
  };
  return { ...range, start };
}
