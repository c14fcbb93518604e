// Secrets reach an MCP server only through env() (docs/decisions/mcp.md). The bridge's
// `env` and `headers` maps are ordinary maps (any number of names), so the schema bridge
// cannot mark their values sensitive; this load-time rule does instead: a value under a
// secret-looking name, or of an authentication header, must read the environment. A literal
// there is a load error at its position — `agent validate` and `agent run` alike.
import type { Attribute, Expression } from "@pluggableharness/hcl";
import { type ConfigDiagnostic, errorAt } from "./diagnostics.ts";
import { DEFAULT_SECRET_PATTERNS } from "./exec-env.ts";
import type { ProviderBlock, RequiredProvider } from "./model.ts";

export const MCP_BRIDGE_SOURCES: ReadonlySet<string> = new Set([
  "pluggableharness/mcp",
  "github.com/pluggableharness/provider-mcp",
]);

/** Name patterns whose values are secrets: the kernel's, and a few more spellings. */
export const MCP_SECRET_NAME_PATTERNS: readonly string[] = [
  ...DEFAULT_SECRET_PATTERNS,
  "*PASSWD*",
  "*CREDENTIAL*",
  "*AUTH*",
  "*COOKIE*",
  "*PRIVATE*",
];

function matches(pattern: string, name: string): boolean {
  const body = pattern
    .split("*")
    .map((p) => p.replace(/[\\^$.+?()[\]{}|/]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`, "i").test(name);
}

/** Whether a variable or header of this name carries a secret. */
export function isSecretName(name: string): boolean {
  return MCP_SECRET_NAME_PATTERNS.some((p) => matches(p, name.replaceAll("-", "_")));
}

/** Whether the expression reads the environment somewhere (env("X"), "Bearer ${env("X")}"). */
function readsEnv(e: Expression): boolean {
  switch (e.kind) {
    case "FunctionCall":
      return e.name === "env" || e.args.some(readsEnv);
    case "Template":
      return e.parts.some((p) => p.kind === "TemplateInterpolation" && readsEnv(p.expr));
    case "TemplateWrap":
    case "Parens":
      return readsEnv(e.expr);
    default:
      return false;
  }
}

function keyName(e: Expression): string | undefined {
  if (e.kind === "Variable") return e.name;
  if (e.kind === "Template" && e.parts.length === 1 && e.parts[0]!.kind === "TemplateLiteral")
    return e.parts[0]!.value;
  return undefined;
}

export function mcpSecretDiagnostics(
  required: readonly RequiredProvider[],
  providers: readonly ProviderBlock[],
): ConfigDiagnostic[] {
  const bridged = new Set(
    required.filter((r) => MCP_BRIDGE_SOURCES.has(r.source.toLowerCase())).map((r) => r.localName),
  );
  const out: ConfigDiagnostic[] = [];
  for (const p of providers) {
    if (!bridged.has(p.name)) continue;
    for (const item of p.body.items) {
      if (item.kind !== "Attribute" || (item.name !== "env" && item.name !== "headers")) continue;
      out.push(...check(p.name, item));
    }
  }
  return out;
}

function check(server: string, attr: Attribute): ConfigDiagnostic[] {
  if (attr.expr.kind !== "Object") return [];
  const out: ConfigDiagnostic[] = [];
  for (const item of attr.expr.items) {
    const name = keyName(item.key);
    if (name === undefined || !isSecretName(name) || readsEnv(item.value)) continue;
    const fix =
      attr.name === "env"
        ? `write ${name} = env("${name}") and set ${name} in the environment`
        : `write ${JSON.stringify(name)} = "Bearer \${env("TOKEN_VARIABLE")}" (or env("...")) and set the variable in the environment`;
    out.push(
      errorAt(
        "secret_literal",
        "Secret written in agent.hcl",
        `MCP server "${server}": ${attr.name}.${name} looks like a secret and must come from env(): ${fix}.`,
        item.value.range,
      ),
    );
  }
  return out;
}
