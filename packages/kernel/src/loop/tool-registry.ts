// The tools a session's model sees. Tool names are only unique per provider, so every
// tool is presented to the model as "<provider>__<tool>" (characters outside
// [A-Za-z0-9_-] become "_", and a name over 64 characters keeps its first 55 and a
// hash). The kernel maps a tool_use name back through this table only, so the scheme
// never has to be parsed; two tools mapping to one name is a session-start error.
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { AgentProfile, RiskName } from "@pluggableharness/config";
import { resolveProfileTools, riskNameOf } from "@pluggableharness/config";
import { type ToolDeclaration, ToolDeclarationSchema } from "@pluggableharness/protocol/model";
import { ToolKind } from "@pluggableharness/protocol/tool";
import type { ValidatedTool } from "../domain/index.ts";
import type { LoadedProvider, ProviderRegistry } from "../plugins/providers.ts";

export const TOOL_NAME_SEPARATOR = "__";
const MAX_NAME = 64;

export interface SessionTool {
  /** The name the model calls it by. */
  readonly declaredName: string;
  readonly provider: LoadedProvider;
  readonly tool: ValidatedTool;
  readonly declaration: ToolDeclaration;
}

export type ToolKindName = "data_source" | "resource" | "interactive";

/** A session tool as the model is shown it, for listings (SessionHandle.tools()). */
export interface SessionToolInfo {
  /** The name the model calls it by: `<provider>__<tool>`. */
  readonly name: string;
  /** The tool provider's local name. */
  readonly provider: string;
  /** The operation's own name at its provider. */
  readonly tool: string;
  readonly kind: ToolKindName;
  readonly risk: RiskName;
  /** Whether the model is offered it now (plan mode withholds resources). */
  readonly offered: boolean;
}

const KIND_NAMES: Record<number, ToolKindName> = {
  [ToolKind.DATA_SOURCE]: "data_source",
  [ToolKind.RESOURCE]: "resource",
  [ToolKind.INTERACTIVE]: "interactive",
};

export class ToolNameCollisionError extends Error {
  readonly code = "tool_name_collision";
  constructor(name: string, a: string, b: string) {
    super(`tools ${a} and ${b} would both be presented to the model as "${name}"`);
    this.name = "ToolNameCollisionError";
  }
}

/** The name a provider's tool is presented to the model by. */
export function declaredToolName(provider: string, tool: string): string {
  const raw = `${provider}${TOOL_NAME_SEPARATOR}${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
  if (raw.length <= MAX_NAME) return raw;
  const hash = createHash("sha256").update(`${provider}\u0000${tool}`).digest("hex").slice(0, 8);
  return `${raw.slice(0, MAX_NAME - 9)}_${hash}`;
}

export class ToolRegistry {
  readonly #byName = new Map<string, SessionTool>();

  constructor(tools: readonly SessionTool[]) {
    for (const t of tools) {
      const other = this.#byName.get(t.declaredName);
      if (other) {
        throw new ToolNameCollisionError(
          t.declaredName,
          `${other.provider.name}.${other.tool.schema.name}`,
          `${t.provider.name}.${t.tool.schema.name}`,
        );
      }
      this.#byName.set(t.declaredName, t);
    }
  }

  /**
   * The profile's tools among what loaded, in the profile's order. `spawn: false` leaves
   * out every spawn-capable tool (ToolSchema.spawns: a session at depth 0 cannot see
   * one); `providers` narrows the set to those tool providers (RunSession's
   * scoped_providers), never widening it.
   */
  static forProfile(
    profile: AgentProfile,
    providers: ProviderRegistry,
    options: { readonly spawn?: boolean; readonly providers?: ReadonlySet<string> } = {},
  ): ToolRegistry {
    const facts: Record<string, { tools: string[] }> = {};
    for (const p of providers.all()) if (p.tools) facts[p.name] = { tools: [...p.tools.tools.keys()] };
    const tools: SessionTool[] = [];
    for (const { provider, tool } of resolveProfileTools(profile, facts)) {
      const p = providers.get(provider)!;
      const t = p.tools!.tools.get(tool)!;
      if (options.spawn === false && t.schema.spawns) continue;
      if (options.providers && !options.providers.has(provider)) continue;
      const declaredName = declaredToolName(provider, tool);
      tools.push({
        declaredName,
        provider: p,
        tool: t,
        declaration: create(ToolDeclarationSchema, {
          name: declaredName,
          description: t.schema.description,
          ...(t.schema.inputSchema ? { inputSchema: t.schema.inputSchema } : {}),
        }),
      });
    }
    return new ToolRegistry(tools);
  }

  get(declaredName: string): SessionTool | undefined {
    return this.#byName.get(declaredName);
  }

  all(): SessionTool[] {
    return [...this.#byName.values()];
  }

  /** Every tool in profile order, named as the model sees it. */
  describe(options: { planMode: boolean }): SessionToolInfo[] {
    return this.all().map((t) => ({
      name: t.declaredName,
      provider: t.provider.name,
      tool: t.tool.schema.name,
      // GetSchema validation rejects unspecified kinds and risks, so both names exist.
      kind: KIND_NAMES[t.tool.schema.kind]!,
      risk: riskNameOf(t.tool.schema.risk)!,
      offered: !(options.planMode && t.tool.schema.kind === ToolKind.RESOURCE),
    }));
  }

  /** Declarations for a request; plan mode withholds every resource tool. */
  declarations(options: { planMode: boolean }): ToolDeclaration[] {
    return this.all()
      .filter((t) => !(options.planMode && t.tool.schema.kind === ToolKind.RESOURCE))
      .map((t) => t.declaration);
  }
}
