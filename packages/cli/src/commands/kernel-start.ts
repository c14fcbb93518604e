// What \`agent run\` and \`agent serve\` both need to start a kernel: how a configuration
// failure is shown, which frontends the CLI runs itself, and the kernel log's level and
// line format. A leaf of the commands, so neither command imports the other.

import {
  type AgentConfig,
  type ConfigDiagnostic,
  firstPartyName,
  formatDiagnostics,
} from "@pluggableharness/config";
import { type KernelLogLevel, type KernelLogRecord, LOG_LEVEL_ORDER } from "@pluggableharness/kernel";
import { EXIT } from "../exit-codes.ts";
import { CliError } from "../io.ts";

/** The friendliest form of a configuration failure: the no-key case is one sentence. */
export function configFailure(diags: readonly ConfigDiagnostic[]): CliError {
  const noKey = diags.find((d) => d.category === "no_model_provider");
  if (noKey) return new CliError(`agent: ${noKey.detail}`, EXIT.ERROR);
  return new CliError(formatDiagnostics([...diags]), EXIT.ERROR);
}

/** Frontend providers the CLI runs itself: the first-party tui, unless its block names a terminal. */
export function inProcessFrontends(config: AgentConfig): string[] {
  return config.requiredProviders
    .filter((r) => firstPartyName(r.source) === "tui")
    .filter((r) => {
      const block = config.providers.find((p) => p.name === r.localName);
      return !block || block.body.items.length === 0;
    })
    .map((r) => r.localName);
}

export function logLevel(env: NodeJS.ProcessEnv, fallback: KernelLogLevel): KernelLogLevel {
  const v = env["AGENT_LOG_LEVEL"]?.toLowerCase();
  return v && v in LOG_LEVEL_ORDER ? (v as KernelLogLevel) : fallback;
}

export function formatLog(r: KernelLogRecord): string {
  const who = r.source === "plugin" ? `plugin ${r.plugin ?? r.logger}` : r.logger;
  const fields = r.fields && Object.keys(r.fields).length > 0 ? ` ${JSON.stringify(r.fields)}` : "";
  return `${r.time.toISOString()} ${r.level.toUpperCase()} [${who}] ${r.message}${fields}`;
}
