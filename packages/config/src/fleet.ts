// `settings { fleet { redis_url = env("…"), postgres_url = env("…") } }`: the engines of
// fleet mode (`agent batch`, `agent worker`; docs/decisions/fleet.md). Both URLs may hold
// passwords, so the secrets rule applies: exactly env("NAME"), checked here on the
// syntax; the value is read only by the commands that connect (resolveFleetUrls).
import type { Block } from "@pluggableharness/hcl";
import { type Diags, decodeBody } from "./decode.ts";
import { type ConfigDiagnostic, errorAt, fileDiag } from "./diagnostics.ts";
import type { AgentConfig, EnvReference, FleetSettings } from "./model.ts";
import { type Environment, envShape } from "./secrets.ts";

const ATTRIBUTES = ["redis_url", "postgres_url"] as const;

export function decodeFleetBlock(block: Block, diags: Diags): FleetSettings | undefined {
  const body = decodeBody(
    block.body,
    { attributes: [...ATTRIBUTES], required: [...ATTRIBUTES] },
    block.typeRange,
    "settings.fleet",
    diags,
  );
  const refs: Partial<Record<(typeof ATTRIBUTES)[number], EnvReference>> = {};
  for (const name of ATTRIBUTES) {
    const attr = body.attrs.get(name);
    if (!attr) continue;
    const shape = envShape(attr.expr, `settings.fleet.${name}`);
    if ("diagnostic" in shape) diags.push(shape.diagnostic);
    else refs[name] = { name: shape.name, range: attr.expr.range };
  }
  if (!refs.redis_url || !refs.postgres_url) return undefined;
  return { redis_url: refs.redis_url, postgres_url: refs.postgres_url, range: block.typeRange };
}

export type FleetUrls =
  | { readonly ok: true; readonly redisUrl: string; readonly postgresUrl: string }
  | { readonly ok: false; readonly diagnostics: ConfigDiagnostic[] };

/** The engines' URLs from the environment, or positioned diagnostics (no block, a variable unset). */
export function resolveFleetUrls(config: AgentConfig, env: Environment): FleetUrls {
  const fleet = config.settings.fleet;
  if (!fleet) {
    return {
      ok: false,
      diagnostics: [
        fileDiag(
          "error",
          "missing_attribute",
          config.file,
          "No fleet configured",
          'Fleet mode needs its engines: add settings { fleet { redis_url = env("REDIS_URL") postgres_url = env("DATABASE_URL") } } and set both variables.',
        ),
      ],
    };
  }
  const diagnostics: ConfigDiagnostic[] = [];
  const read = (ref: EnvReference): string | undefined => {
    const value = Object.hasOwn(env, ref.name) ? env[ref.name] : undefined;
    if (value !== undefined && value !== "") return value;
    diagnostics.push(
      errorAt(
        "env_unset",
        "Environment variable not set",
        `The environment variable "${ref.name}" is not set (or empty); agent batch and agent worker need it.`,
        ref.range,
      ),
    );
    return undefined;
  };
  const redisUrl = read(fleet.redis_url);
  const postgresUrl = read(fleet.postgres_url);
  if (redisUrl === undefined || postgresUrl === undefined) return { ok: false, diagnostics };
  return { ok: true, redisUrl, postgresUrl };
}
