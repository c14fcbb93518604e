// What a provider's own Configure said about its block, positioned at the attribute it names
// (else the block's label, else its required_providers entry). `agent validate` and the
// kernel's start-up both report Configure errors through this, so the two refuse the same
// blocks with the same file:line:col messages.
import type { Range } from "@pluggableharness/hcl";
import type { ConfigDiagnostic } from "./diagnostics.ts";
import type { AgentConfig } from "./model.ts";

/** One Configure diagnostic, as the plugin returned it (no secret values, by contract). */
export interface ConfigureProblem {
  readonly severity: "error" | "warning";
  readonly attributePath: readonly string[];
  readonly summary: string;
  readonly detail: string;
}

/** Where a diagnostic about provider `name` points: its block's label, else its required_providers entry. */
export function providerRange(config: AgentConfig, name: string): Range | undefined {
  const block = config.providers.find((b) => b.name === name);
  return block?.block.labels[0]?.range ?? config.requiredProviders.find((r) => r.localName === name)?.range;
}

/** The range of the attribute `path` names inside provider `name`'s block, if it is written. */
export function attributeRange(
  config: AgentConfig,
  name: string,
  path: readonly string[],
): Range | undefined {
  let body = config.providers.find((b) => b.name === name)?.body;
  let found: Range | undefined;
  for (const key of path) {
    const item = body?.items.find((i) => (i.kind === "Attribute" ? i.name : i.type) === key);
    if (!item) break;
    found = item.kind === "Attribute" ? item.nameRange : item.typeRange;
    body = item.kind === "Block" ? item.body : undefined;
  }
  return found;
}

/**
 * Configure's diagnostics as configuration diagnostics. A provider serving several
 * categories is configured once per category and may say the same thing each time: each
 * problem is reported once.
 */
export function configureDiagnostics(
  config: AgentConfig,
  name: string,
  problems: readonly ConfigureProblem[],
): ConfigDiagnostic[] {
  const seen = new Set<string>();
  const out: ConfigDiagnostic[] = [];
  for (const d of problems) {
    const attr = d.attributePath.length > 0 ? ` (${d.attributePath.join(".")})` : "";
    const range = attributeRange(config, name, d.attributePath) ?? providerRange(config, name);
    const diag: ConfigDiagnostic = {
      severity: d.severity,
      category: "provider_configure",
      summary:
        d.severity === "error"
          ? `Provider "${name}" rejected its configuration`
          : `Provider "${name}" warns about its configuration`,
      detail: `${d.summary}${attr}${d.detail ? `: ${d.detail}` : ""}`,
      file: range?.filename ?? config.file,
      line: range?.start.line ?? 1,
      column: range?.start.column ?? 1,
    };
    const key = `${diag.severity}\0${diag.line}:${diag.column}\0${diag.detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(diag);
  }
  return out;
}
