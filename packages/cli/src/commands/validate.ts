// `agent validate [dir]`: everything a session start would check about the
// configuration, without starting one. Loads agent.hcl (or the built-in default) and
// the global config, resolves and verifies providers against the lock file, launches
// each plugin for its schema, decodes every provider block against it, and runs the
// second pass against the tools and models the plugins actually offer. Every
// diagnostic is printed as file:line:col; the exit status is 0 when there is no error.
import { resolve } from "node:path";
import {
  BUILTIN_CONFIG_FILE,
  type ConfigDiagnostic,
  decodeProviderConfig,
  formatDiagnostic,
  type LoadedProviders,
  loadGlobalConfig,
  loadProjectConfig,
  validateAgainstProviders,
  verifyLock,
} from "@pluggableharness/config";
import { EXIT } from "../exit-codes.ts";
import { inspectProviders } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { type Io, line } from "../io.ts";

function sortDiagnostics(diags: ConfigDiagnostic[]): ConfigDiagnostic[] {
  return [...diags].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
}

export async function runValidate(io: Io, dirArg: string | undefined): Promise<number> {
  const dir = resolve(io.cwd, dirArg ?? ".");
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
    line(io.out, `No agent.hcl in ${dir}: checking the ${BUILTIN_CONFIG_FILE}.`);

  // As `agent run` would: forge providers installed (what the cache lacks is downloaded)
  // and verified against the lock; the lock file itself is not written here.
  const resolution = await resolveProject(io, dir, config, { mode: "use" });
  if (global.ok) diags.push(...resolution.diagnostics);
  if (resolution.lock) diags.push(...verifyLock(resolution.lock, resolution.resolved));
  const facts = await inspectProviders(config, resolution.resolved);

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
    // A plugin without a config schema accepts an empty block only; the second pass
    // below decodes the blocks of plugins that declare one.
    if (!f.configSchema && config.providers.some((b) => b.name === name)) {
      const decoded = decodeProviderConfig(config, name, { attributes: [] }, io.env);
      if (!decoded.ok) diags.push(...decoded.diagnostics);
    }
    loadedFacts[name] = {
      tools: f.tools.map((t) => t.name),
      models: f.models,
      specs: f.specs,
      hookPoints: f.hookPoints,
      ...(f.configSchema ? { configSchema: f.configSchema } : {}),
    };
  }
  // The second pass, which also decodes every provider block against its schema.
  diags.push(...validateAgainstProviders(config, loadedFacts, io.env));
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
