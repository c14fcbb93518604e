// `agent validate [dir]`: everything a session start would check about the
// configuration, without starting one. Loads agent.hcl (or the built-in default) and
// the global config, resolves and verifies providers against the lock file, gets each
// plugin's schema (from the describe cache, or by launching it), has Configure check every
// block `agent run` would have checked (inspect.ts: a configuration Configure accepted
// before is not sent again, as `agent run` does not), decodes every block, and runs the
// second pass against the tools and models the plugins actually offer. Every
// diagnostic is printed as file:line:col; the exit status is 0 when there is no error.
import {
  type AgentConfig,
  type AgentProfile,
  BUILTIN_CONFIG_FILE,
  builtinRootProfile,
  type ConfigDiagnostic,
  configureDiagnostics,
  decodeProviderConfig,
  formatDiagnostic,
  type LoadedProviders,
  loadGlobalConfig,
  loadProjectConfig,
  resolveProfileTools,
  unavailableReason,
  validateAgainstProviders,
  verifyLock,
} from "@pluggableharness/config";
import type { Range } from "@pluggableharness/hcl";
import { declaredToolName, domain } from "@pluggableharness/kernel";
import { EXIT } from "../exit-codes.ts";
import { inspectProviders, type ProviderFacts } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";

function sortDiagnostics(diags: ConfigDiagnostic[]): ConfigDiagnostic[] {
  return [...diags].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
}

export async function runValidate(io: Io, dirArg: string | undefined): Promise<number> {
  const project = projectOf(io, dirArg);
  const dir = project.dir;
  const diags: ConfigDiagnostic[] = [];
  const print = () => {
    for (const d of sortDiagnostics(diags)) line(io.out, formatDiagnostic(d));
  };
  const loaded = loadProjectConfig(dir, { env: io.env });
  const global = loadGlobalConfig({ env: io.env });
  if (!global.ok) diags.push(...global.diagnostics);
  if (!loaded.ok) {
    diags.push(...loaded.diagnostics);
    print();
    line(io.out, summary(diags));
    return EXIT.ERROR;
  }
  const config = loaded.config;
  diags.push(...loaded.warnings);
  if (config.origin === "builtin")
    line(io.out, `No agent.hcl in ${dir} or above it: checking the ${BUILTIN_CONFIG_FILE}.`);
  else line(io.out, `Checking ${config.file}`);

  // As `agent run` would: forge providers installed (what the cache lacks is downloaded)
  // and verified against the lock; the lock file itself is not written here.
  const resolution = await resolveProject(io, dir, config, { mode: "use" });
  if (global.ok) diags.push(...resolution.diagnostics);
  if (resolution.lock) diags.push(...verifyLock(resolution.lock, resolution.resolved));

  // Each provider is configured with its block, as a session start would: Configure's own
  // diagnostics are problems `agent run` would stop at, and a server whose models come
  // from its configuration only lists them afterwards.
  const facts = await inspectProviders(config, resolution.resolved, {
    configure: (name, schema) => {
      const d = decodeProviderConfig(config, name, schema ?? { attributes: [] }, io.env);
      return d.ok ? d.config.values : undefined; // decode problems come from the second pass
    },
    env: io.env,
    // Which transport `agent run` picks is not a configuration problem: no sandbox probe.
    transports: false,
  });
  const loadedFacts: Record<string, LoadedProviders[string]> = {};
  for (const f of facts) {
    const name = f.resolved.localName;
    if (f.error !== undefined) {
      const req = config.requiredProviders.find((r) => r.localName === name);
      diags.push({
        severity: "error",
        category: "io",
        summary: `Provider "${name}" could not be launched`,
        detail: f.error,
        file: config.file,
        line: req?.range.start.line ?? 1,
        column: req?.range.start.column ?? 1,
      });
      continue;
    }
    diags.push(
      ...describedViolations(config, f),
      ...configureDiagnostics(config, name, f.configureDiagnostics),
    );
    // A plugin without a config schema accepts an empty block only; the second pass
    // below decodes the blocks of plugins that declare one.
    if (!f.configSchema && config.providers.some((b) => b.name === name)) {
      const decoded = decodeProviderConfig(config, name, { attributes: [] }, io.env);
      if (!decoded.ok) diags.push(...decoded.diagnostics);
    }
    // The kernel's rule: a bridge whose server did not start leaves its patterns matching
    // nothing, with the warning its Configure gave (printed above), not an error.
    const unavailable = unavailableReason(
      !!f.toolSchema?.operationsFromConfig,
      f.tools.length,
      f.configureDiagnostics.filter((d) => d.severity === "warning").map((d) => d.detail || d.summary),
    );
    loadedFacts[name] = {
      ...(unavailable !== undefined ? { unavailable } : {}),
      tools: f.tools.map((t) => t.name),
      models: f.models,
      specs: f.specs,
      hookPoints: f.hookPoints,
      slashCommands: f.slashCommands,
      ...(f.configSchema ? { configSchema: f.configSchema } : {}),
    };
  }
  // The second pass, which also decodes every provider block against its schema.
  diags.push(...validateAgainstProviders(config, loadedFacts, io.env));
  // What creating a session checks: each profile has a model to route to and no two of
  // its tools reach the model under one name.
  const launched = facts.every((f) => f.error === undefined);
  if (launched) diags.push(...sessionChecks(config, loadedFacts));
  print();
  line(io.out, summary(diags, facts.length));
  return diags.some((d) => d.severity === "error") ? EXIT.ERROR : EXIT.OK;
}

function summary(diags: ConfigDiagnostic[], providers?: number): string {
  const errors = diags.filter((d) => d.severity === "error").length;
  const warnings = diags.length - errors;
  const w = warnings > 0 ? `, ${warnings} warning${warnings === 1 ? "" : "s"}` : "";
  if (errors > 0) return `Invalid: ${errors} error${errors === 1 ? "" : "s"}${w}.`;
  return `Valid${providers !== undefined ? ` (${providers} provider${providers === 1 ? "" : "s"} checked)` : ""}${w}.`;
}

function at(
  config: AgentConfig,
  range: Range | undefined,
): Pick<ConfigDiagnostic, "file" | "line" | "column"> {
  return {
    file: range?.filename ?? config.file,
    line: range?.start.line ?? 1,
    column: range?.start.column ?? 1,
  };
}

/** The kernel's rules for what a provider describes (tool schemas, model specs); a breach stops loading. */
function describedViolations(config: AgentConfig, f: ProviderFacts): ConfigDiagnostic[] {
  const name = f.resolved.localName;
  const out: ConfigDiagnostic[] = [];
  const check = (what: string, fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      out.push({
        severity: "error",
        category: "provider_description",
        summary: `Provider "${name}" describes ${what} the kernel cannot use`,
        detail: (err as Error).message,
        ...at(config, config.requiredProviders.find((r) => r.localName === name)?.range),
      });
    }
  };
  if (f.toolSchema) check("tools", () => domain.validateToolSchemas(name, f.toolSchema!));
  if (f.modelCapabilities) check("models", () => domain.validateCapabilities(name, f.modelCapabilities!));
  return out;
}

/** The profiles a session could start with: the declared ones, and the built-in default when none is "default". */
function runnableProfiles(config: AgentConfig): AgentProfile[] {
  const declared = config.profiles;
  return declared.some((p) => p.name === "default") ? declared : [...declared, builtinRootProfile(config)];
}

/** Session creation's checks for every profile `agent run` could use. */
function sessionChecks(config: AgentConfig, loaded: LoadedProviders): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const modelProviders = Object.entries(loaded).filter(([, f]) => (f.models ?? []).length > 0);
  for (const profile of runnableProfiles(config)) {
    const label = profile.declared ? `agent_profile "${profile.name}"` : "The built-in default profile";
    const candidates = profile.model ? [profile.model.primary, ...profile.model.fallbacks] : undefined;
    const usable = candidates
      ? candidates.some((c) => (loaded[c.provider]?.models ?? []).includes(c.id))
      : modelProviders.length > 0;
    if (!usable) {
      out.push({
        severity: "error",
        category: "no_usable_model",
        summary: "No usable model",
        detail: candidates
          ? `${label} routes to ${candidates.map((c) => `"${c.provider}/${c.id}"`).join(", ")}, and no loaded provider offers any of them: \`agent run\` cannot start a session with it.`
          : `${label} uses the first model a provider offers, and ${config.file} declares no provider that serves models: \`agent run\` cannot start a session. Add a model provider (\`agent init\` writes one for the vendor keys it finds).`,
        ...at(config, profile.model?.primary.range ?? profile.range),
      });
    }
    const names = new Map<string, string>();
    for (const { provider, tool } of resolveProfileTools(profile, loaded)) {
      const declared = declaredToolName(provider, tool);
      const other = names.get(declared);
      if (other !== undefined) {
        const pattern = profile.tools.find((t) => t.provider === provider);
        out.push({
          severity: "error",
          category: "tool_name_collision",
          summary: "Tool name collision",
          detail: `In ${label}, ${other} and ${provider}.${tool} would both reach the model as "${declared}".`,
          ...at(config, pattern?.range ?? profile.range),
        });
      } else names.set(declared, `${provider}.${tool}`);
    }
  }
  return out;
}
