// Measures what an Anthropic Messages request spends on fixed text: the system blocks and
// each tool declaration. Tokens are estimated as UTF-8 bytes / 4 of the compact JSON the
// request carried, the same estimate the fake vendor and the benchmark use, so figures
// compare across harnesses rather than match a real tokenizer.

export const tokensOf = (value: unknown): number =>
  Math.ceil(Buffer.byteLength(typeof value === "string" ? value : JSON.stringify(value)) / 4);

export interface ToolSize {
  name: string;
  /** The whole declaration (name, description, schema, cache marker). */
  tokens: number;
  descriptionChars: number;
  descriptionTokens: number;
  schemaTokens: number;
}

export interface RequestSize {
  /** Each system block in order (base instructions first, then context providers). */
  system: { tokens: number; head: string }[];
  systemTokens: number;
  tools: ToolSize[];
  toolsTokens: number;
  /** System plus tools: the part every request repeats. */
  fixedTokens: number;
  bodyTokens: number;
}

interface AnthropicBody {
  system?: string | { text: string }[];
  tools?: { name: string; description?: string; input_schema?: unknown }[];
}

export function measureRequest(bodyText: string): RequestSize {
  const body = JSON.parse(bodyText) as AnthropicBody;
  const blocks = typeof body.system === "string" ? [{ text: body.system }] : (body.system ?? []);
  const system = blocks.map((b) => ({ tokens: tokensOf(b), head: b.text.split("\n", 1)[0]!.slice(0, 60) }));
  const tools = (body.tools ?? []).map((t) => ({
    name: t.name,
    tokens: tokensOf(t),
    descriptionChars: (t.description ?? "").length,
    descriptionTokens: tokensOf(t.description ?? ""),
    schemaTokens: tokensOf(t.input_schema ?? {}),
  }));
  const systemTokens = tokensOf(body.system ?? "");
  const toolsTokens = tokensOf(body.tools ?? []);
  return {
    system,
    systemTokens,
    tools,
    toolsTokens,
    fixedTokens: systemTokens + toolsTokens,
    bodyTokens: tokensOf(bodyText),
  };
}

/** A plain-text table of the breakdown, for the test log and the decision record. */
export function formatRequestSize(m: RequestSize): string {
  const rows = [
    `system ${m.systemTokens} tokens`,
    ...m.system.map((b) => `  ${String(b.tokens).padStart(5)}  ${b.head}`),
    `tools ${m.toolsTokens} tokens (${m.tools.length} tools)`,
    ...m.tools.map(
      (t) =>
        `  ${String(t.tokens).padStart(5)}  ${t.name} (description ${t.descriptionTokens}, schema ${t.schemaTokens})`,
    ),
    `system + tools ${m.fixedTokens} tokens; whole body ${m.bodyTokens}`,
  ];
  return rows.join("\n");
}
