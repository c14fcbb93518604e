// `agent providers`: the providers this project resolves to: who they are (Describe),
// what they serve (categories, tools with kind and risk, models) and whether they are
// healthy. A first-party build described before is answered from the describe cache
// without starting it, unless its configuration has not passed its Configure yet or
// --check asks for every provider to be launched (inspect.ts). Providers are configured
// from agent.hcl first, so a server whose models come from configuration lists them.
import {
  decodeProviderConfig,
  formatDiagnostics,
  loadGlobalConfig,
  loadProjectConfig,
} from "@pluggableharness/config";
import { EXIT } from "../exit-codes.ts";
import { inspectProviders, type ProviderFacts } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";

export async function runProviders(
  io: Io,
  opts: { dir?: string; json?: boolean; check?: boolean },
): Promise<number> {
  const dir = projectOf(io, opts.dir).dir;
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) throw new CliError(formatDiagnostics(loaded.diagnostics), EXIT.ERROR);
  const global = loadGlobalConfig({ env: io.env });
  if (!global.ok) throw new CliError(formatDiagnostics(global.diagnostics), EXIT.ERROR);
  const { resolved: providers, diagnostics } = await resolveProject(io, dir, loaded.config, { mode: "use" });
  const decodeProblems = new Map<string, string>();
  const facts = await inspectProviders(loaded.config, providers, {
    configure: (name, schema) => {
      const d = decodeProviderConfig(loaded.config, name, schema ?? { attributes: [] }, io.env);
      if (d.ok) return d.config.values;
      decodeProblems.set(name, formatDiagnostics(d.diagnostics));
      return undefined;
    },
    env: io.env,
    live: !!opts.check,
  });
  if (opts.json) {
    line(
      io.out,
      JSON.stringify(
        facts.map((f) => ({
          name: f.resolved.localName,
          source: f.resolved.source,
          origin: f.resolved.origin,
          executable: f.resolved.executable,
          categories: f.categories,
          identity: Object.fromEntries(
            Object.entries(f.producers).map(([k, p]) => [
              k,
              { name: p.name, version: p.version, source: p.source },
            ]),
          ),
          tools: f.tools,
          models: f.models,
          healthy: f.healthy,
          started: f.started,
          ...(f.error ? { error: f.error } : {}),
          problems: [
            ...(decodeProblems.has(f.resolved.localName) ? [decodeProblems.get(f.resolved.localName)!] : []),
            ...f.configureProblems,
          ],
        })),
        null,
        2,
      ),
    );
  } else {
    for (const f of facts) printProvider(io, f, decodeProblems.get(f.resolved.localName));
    for (const d of diagnostics) line(io.err, formatDiagnostics([d]));
  }
  const unhealthy = facts.filter((f) => !f.healthy).length;
  return unhealthy > 0 || diagnostics.length > 0 ? EXIT.ERROR : EXIT.OK;
}

/** How `agent providers` says where a provider runs. */
const RUNS: Record<ProviderFacts["isolation"], string> = {
  worker: "in a worker thread",
  hosted: "in a worker thread of the sandbox host",
  process: "as its own process",
};

function printProvider(io: Io, f: ProviderFacts, decodeProblem: string | undefined): void {
  const identity = Object.values(f.producers)[0];
  const who = identity
    ? `${identity.name} ${identity.version}${identity.source ? ` (${identity.source})` : ""}`
    : f.resolved.source;
  const health = !f.healthy
    ? `unhealthy${f.error ? `: ${f.error.split("\n")[0]}` : ""}`
    : f.started
      ? "healthy"
      : "not started (described from the cache; --check starts it)";
  line(
    io.out,
    `${f.resolved.localName}  [${f.categories.filter((c) => c !== "hook").join(", ") || "?"}]  ${who}  ${health}`,
  );
  if (f.resolved.origin === "dev_override") line(io.out, `  dev override: ${f.resolved.executable}`);
  if (f.resolved.origin === "forge")
    line(io.out, `  installed: ${f.resolved.version} (${f.resolved.platform}) in ${f.resolved.installDir}`);
  if (f.tools.length > 0)
    line(io.out, `  tools: ${f.tools.map((t) => `${t.name} (${t.kind}, ${t.risk})`).join(", ")}`);
  if (f.models.length > 0) line(io.out, `  models: ${f.models.join(", ")}`);
  if (f.resolved.origin !== "dev_override") line(io.out, `  runs: ${RUNS[f.isolation]}`);
  if (decodeProblem) line(io.out, `  not configured: ${decodeProblem.replace(/\n/g, "\n    ")}`);
  for (const p of f.configureProblems) line(io.out, `  configuration problem: ${p}`);
}
