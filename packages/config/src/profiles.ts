// `agent_profile "<name>" { ... }` blocks (configuration/agent-profiles.md).

import type { JsonObject } from "@bufbuild/protobuf";
import {
  type Attribute,
  type Block,
  evaluate,
  FunctionError,
  isObject,
  type Range,
} from "@pluggableharness/hcl";
import {
  type Diags,
  decodeBody,
  label,
  readBool,
  readNumber,
  readString,
  readStringList,
  typeError,
} from "./decode.ts";
import { errorAt, fromHcl, warningAt } from "./diagnostics.ts";
import type { AgentProfile, GenerationParamsConfig, ModelRef, ToolPattern } from "./model.ts";

const PROVIDER_PART = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const TOOL_PART = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const COMMAND = /^[A-Za-z0-9][A-Za-z0-9_:-]*$/;

/**
 * Parses "<provider>.<tool>" or "<provider>.*". Returns a reason when malformed.
 */
export function parseToolPattern(text: string): { provider: string; tool: string } | { error: string } {
  const dot = text.indexOf(".");
  if (dot < 0)
    return {
      error: `"${text}" has no "." between provider and tool; write "${text}.<tool>" or "${text}.*".`,
    };
  const provider = text.slice(0, dot);
  const tool = text.slice(dot + 1);
  if (provider === "") return { error: `"${text}" has an empty provider name.` };
  if (tool === "")
    return { error: `"${text}" has an empty tool name; write "${provider}.*" for every tool.` };
  if (!PROVIDER_PART.test(provider)) return { error: `"${provider}" is not a valid provider name.` };
  if (tool !== "*" && !TOOL_PART.test(tool)) {
    return {
      error: tool.includes("*")
        ? `"${text}": only a whole-tool wildcard "${provider}.*" is supported.`
        : `"${tool}" is not a valid tool name.`,
    };
  }
  return { provider, tool };
}

const PROFILE_ATTRS = [
  "tools",
  "slash_commands",
  "max_depth",
  "max_concurrent_subagents",
  "max_turns",
  "max_cost_usd",
  "max_wall_clock_s",
  "fork_parent_history",
];

const PARAM_ATTRS = [
  "thinking_effort",
  "thinking_budget_tokens",
  "max_output_tokens",
  "temperature",
  "top_p",
  "top_k",
  "stop_sequences",
];

/**
 * `provider_options`: an object of plain values, sent with every request routed to the
 * candidate. No functions: env() in particular is refused, because the values travel in
 * each request and are recorded with it, so they are no place for a secret (a vendor key
 * belongs in the provider block, whose schema marks it sensitive).
 */
function readProviderOptions(attr: Attribute, what: string, diags: Diags): JsonObject | undefined {
  const r = evaluate(attr.expr, {
    functions: {
      env: () => {
        throw new FunctionError({
          code: "unknown-function",
          summary: "env() is not allowed here",
          detail: `${what} takes plain values only; a secret belongs in the provider block.`,
        });
      },
    },
  });
  for (const d of r.diagnostics) diags.push(fromHcl(d, "eval"));
  const v = r.value;
  if (v === undefined) return undefined;
  if (!isObject(v)) {
    diags.push(typeError(attr.expr.range, what, "an object, e.g. { seed = 7 }", v));
    return undefined;
  }
  // HCL values are JSON values already (finite numbers, strings, bools, null, lists, objects).
  return v as JsonObject;
}

function decodeModelRef(block: Block, what: string, diags: Diags): ModelRef | undefined {
  const body = decodeBody(
    block.body,
    {
      attributes: ["provider", "id", "provider_options", ...PARAM_ATTRS],
      required: ["provider", "id"],
    },
    block.typeRange,
    what,
    diags,
  );
  const get = (n: string) => body.attrs.get(n);
  const provider = get("provider") && readString(get("provider")!, `${what}.provider`, diags);
  const id = get("id") && readString(get("id")!, `${what}.id`, diags);
  for (const [n, v] of [
    ["provider", provider],
    ["id", id],
  ] as const) {
    if (v === "")
      diags.push(
        errorAt("invalid_value", "Empty value", `${what}.${n} cannot be empty.`, get(n)!.expr.range),
      );
  }
  const params: GenerationParamsConfig = {};
  const paramRanges: NonNullable<ModelRef["paramRanges"]> = {};
  for (const n of PARAM_ATTRS) {
    const a = get(n);
    if (a) paramRanges[n as keyof GenerationParamsConfig] = a.expr.range;
  }
  const effort = get("thinking_effort");
  if (effort) {
    const v = readString(effort, `${what}.thinking_effort`, diags);
    if (v !== undefined) params.thinking_effort = v;
  }
  const ints: Array<["thinking_budget_tokens" | "max_output_tokens", number]> = [
    ["thinking_budget_tokens", 0],
    ["max_output_tokens", 1],
  ];
  for (const [n, min] of ints) {
    const a = get(n);
    if (!a) continue;
    const v = readNumber(a, `${what}.${n}`, { integer: true, min }, diags);
    if (v !== undefined) params[n] = v;
  }
  const temp = get("temperature");
  if (temp) {
    const v = readNumber(temp, `${what}.temperature`, { min: 0 }, diags);
    if (v !== undefined) params.temperature = v;
  }
  const topP = get("top_p");
  if (topP) {
    const v = readNumber(topP, `${what}.top_p`, { min: 0, max: 1 }, diags);
    if (v !== undefined) params.top_p = v;
  }
  const topK = get("top_k");
  if (topK) {
    const v = readNumber(topK, `${what}.top_k`, { integer: true, min: 1 }, diags);
    if (v !== undefined) params.top_k = v;
  }
  const stops = get("stop_sequences");
  if (stops) {
    const v = readStringList(stops, `${what}.stop_sequences`, diags);
    if (v !== undefined) params.stop_sequences = v.map((s) => s.value);
  }
  const optionsAttr = get("provider_options");
  const providerOptions = optionsAttr && readProviderOptions(optionsAttr, `${what}.provider_options`, diags);
  if (!provider || !id) return undefined;
  return {
    provider,
    id,
    params,
    ...(providerOptions ? { provider_options: providerOptions } : {}),
    range: block.typeRange,
    providerRange: get("provider")!.expr.range,
    paramRanges,
  };
}

export function decodeProfileBlock(block: Block, diags: Diags): AgentProfile | undefined {
  const { value: name, range: nameRange } = label(block);
  const owner = `agent_profile "${name}"`;
  const before = diags.filter((d) => d.severity === "error").length;
  const body = decodeBody(
    block.body,
    { attributes: PROFILE_ATTRS, blocks: { model: { single: true } } },
    block.typeRange,
    owner,
    diags,
  );
  if (name.trim() === "")
    diags.push(errorAt("invalid_value", "Empty profile name", "A profile needs a name.", nameRange));

  const profile: AgentProfile = { name, tools: [], slash_commands: [], declared: true, range: nameRange };

  const modelBlock = body.blocks.find((b) => b.type === "model");
  if (modelBlock !== undefined) {
    const mb = decodeBody(
      modelBlock.body,
      { blocks: { primary: { single: true }, fallback: {} } },
      modelBlock.typeRange,
      `${owner} model`,
      diags,
    );
    const primaryBlock = mb.blocks.find((b) => b.type === "primary");
    if (primaryBlock === undefined) {
      diags.push(
        errorAt(
          "missing_attribute",
          "Missing primary model",
          `The model block of ${owner} needs a "primary { ... }" block.`,
          modelBlock.typeRange,
        ),
      );
    }
    const primary = primaryBlock && decodeModelRef(primaryBlock, `${owner} model.primary`, diags);
    const fallbacks: ModelRef[] = [];
    mb.blocks
      .filter((b) => b.type === "fallback")
      .forEach((b, i) => {
        const ref = decodeModelRef(b, `${owner} model.fallback[${i}]`, diags);
        if (ref) fallbacks.push(ref);
      });
    if (primary) profile.model = { primary, fallbacks };
  }

  const tools = body.attrs.get("tools");
  if (tools) {
    const seen = new Set<string>();
    for (const item of readStringList(tools, `${owner} tools`, diags) ?? []) {
      const parsed = parseToolPattern(item.value);
      if ("error" in parsed) {
        diags.push(errorAt("tool_pattern", "Malformed tool pattern", parsed.error, item.range));
        continue;
      }
      if (seen.has(item.value)) {
        diags.push(
          warningAt("duplicate", "Duplicate tool pattern", `"${item.value}" is listed twice.`, item.range),
        );
        continue;
      }
      seen.add(item.value);
      profile.tools.push({ ...parsed, text: item.value, range: item.range } satisfies ToolPattern);
    }
  }

  const commands = body.attrs.get("slash_commands");
  if (commands) {
    for (const item of readStringList(commands, `${owner} slash_commands`, diags) ?? []) {
      const v = item.value;
      if (!COMMAND.test(v)) {
        diags.push(
          errorAt(
            "invalid_value",
            "Invalid slash command name",
            v.startsWith("/")
              ? `Write the command without the leading "/": "${v.slice(1)}".`
              : `"${v}" is not a valid command name.`,
            item.range,
          ),
        );
        continue;
      }
      if (!profile.slash_commands.includes(v)) profile.slash_commands.push(v);
    }
  }

  const num = (n: string, rule: Parameters<typeof readNumber>[2]) => {
    const a = body.attrs.get(n);
    return a === undefined ? undefined : readNumber(a, `${owner} ${n}`, rule, diags);
  };
  const set = <K extends keyof AgentProfile>(k: K, v: AgentProfile[K] | undefined) => {
    if (v !== undefined) profile[k] = v;
  };
  set("max_depth", num("max_depth", { integer: true, min: 0 }));
  set("max_concurrent_subagents", num("max_concurrent_subagents", { integer: true, min: 1 }));
  set("max_turns", num("max_turns", { integer: true, min: 1 }));
  set("max_cost_usd", num("max_cost_usd", { min: 0, exclusiveMin: true }));
  set("max_wall_clock_s", num("max_wall_clock_s", { integer: true, min: 1 }));
  const fork = body.attrs.get("fork_parent_history");
  if (fork !== undefined) {
    const v = readBool(fork, `${owner} fork_parent_history`, diags);
    if (v !== undefined) profile.fork_parent_history = v;
  }

  const after = diags.filter((d) => d.severity === "error").length;
  return after > before ? undefined : profile;
}

/** Every provider a profile references, with where. */
export function profileReferences(p: AgentProfile): Array<{ provider: string; range: Range; what: string }> {
  const out: Array<{ provider: string; range: Range; what: string }> = [];
  if (p.model) {
    for (const m of [p.model.primary, ...p.model.fallbacks]) {
      out.push({ provider: m.provider, range: m.providerRange, what: `model "${m.provider}/${m.id}"` });
    }
  }
  for (const t of p.tools)
    out.push({ provider: t.provider, range: t.range, what: `tool pattern "${t.text}"` });
  return out;
}
