// Edits agent.hcl for `agent mcp add|remove` by splicing text at the parser's byte ranges:
// everything the edit does not touch — comments, blank lines, alignment, other blocks —
// stays byte for byte. New text is written in the layout `terraform fmt` would give it,
// with literal values rendered by the HCL writer and secrets as env("NAME") expressions.
import { type Block, type Expression, parseFile, type Range, writeValue } from "@pluggableharness/hcl";

/** The first-party source every bridged server's required_providers entry names. */
export const MCP_SOURCE = "pluggableharness/mcp";
const MCP_SOURCES = new Set(["pluggableharness/mcp", "github.com/pluggableharness/provider-mcp"]);

/** A value to write: a literal, or env("NAME") (a secret, resolved when the config loads). */
export type Written = { literal: string } | { env: string } | { template: string; env: string };

export interface ServerSpec {
  name: string;
  transport: "stdio" | "http" | "sse";
  command?: readonly string[];
  url?: string;
  env: ReadonlyArray<[string, Written]>;
  headers: ReadonlyArray<[string, Written]>;
  extra: ReadonlyArray<[string, string | boolean]>;
}

export interface McpEntry {
  name: string;
  /** The provider block's source text of each attribute. */
  attributes: Record<string, string>;
}

export class EditError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EditError";
  }
}

function text(bytes: Buffer, r: Range): string {
  return bytes.subarray(r.start.byte, r.end.byte).toString("utf8");
}

function parse(source: string, file: string) {
  const bytes = Buffer.from(source, "utf8");
  const parsed = parseFile(bytes, file);
  const errors = parsed.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) throw new EditError(`${file} does not parse; fix it first (agent validate)`);
  return { bytes, body: parsed.file.body };
}

function stringOf(e: Expression | undefined): string | undefined {
  if (!e) return undefined;
  if (e.kind === "Template" && e.parts.length === 1 && e.parts[0]!.kind === "TemplateLiteral")
    return e.parts[0]!.value;
  if (e.kind === "Template" && e.parts.length === 0) return "";
  return undefined;
}

function objectItem(e: Expression, key: string): Expression | undefined {
  if (e.kind !== "Object") return undefined;
  for (const item of e.items) {
    const k = item.key.kind === "Variable" ? item.key.name : stringOf(item.key);
    if (k === key) return item.value;
  }
  return undefined;
}

function requiredBlock(body: ReturnType<typeof parse>["body"]): Block | undefined {
  return body.items.find((i): i is Block => i.kind === "Block" && i.type === "required_providers");
}

/** The required_providers entries that name the MCP bridge, with their provider blocks. */
export function listServers(source: string, file: string): McpEntry[] {
  const { bytes, body } = parse(source, file);
  const req = requiredBlock(body);
  if (!req) return [];
  const out: McpEntry[] = [];
  for (const item of req.body.items) {
    if (item.kind !== "Attribute") continue;
    const src = stringOf(objectItem(item.expr, "source"));
    if (!src || !MCP_SOURCES.has(src.toLowerCase())) continue;
    const block = body.items.find(
      (b): b is Block => b.kind === "Block" && b.type === "provider" && b.labels[0]?.value === item.name,
    );
    const attributes: Record<string, string> = {};
    for (const a of block?.body.items ?? []) {
      if (a.kind === "Attribute") attributes[a.name] = text(bytes, a.expr.range);
    }
    out.push({ name: item.name, attributes });
  }
  return out;
}

function quote(s: string): string {
  return writeValue(s);
}

function written(w: Written): string {
  if ("literal" in w) return quote(w.literal);
  if ("template" in w) return `"${w.template.replace("%s", `\${env(${quote(w.env)})}`)}"`;
  return `env(${quote(w.env)})`;
}

function mapText(entries: ReadonlyArray<[string, Written]>, indent: string): string {
  const width = Math.max(...entries.map(([k]) => keyText(k).length));
  const lines = entries.map(([k, v]) => `${indent}  ${keyText(k).padEnd(width)} = ${written(v)}`);
  return `{\n${lines.join("\n")}\n${indent}}`;
}

function keyText(k: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) ? k : quote(k);
}

/** The provider block for a server, as agent mcp add writes it. */
export function providerBlockText(spec: ServerSpec): string {
  const attrs: Array<[string, string]> = [];
  if (spec.command) attrs.push(["command", writeValue([...spec.command])]);
  if (spec.url) attrs.push(["url", quote(spec.url)]);
  if (spec.transport === "sse") attrs.push(["transport", quote("sse")]);
  for (const [k, v] of spec.extra) attrs.push([k, typeof v === "boolean" ? String(v) : quote(v)]);
  const simple = attrs.filter(([, v]) => !v.includes("\n"));
  const width = Math.max(0, ...simple.map(([k]) => k.length));
  const lines = attrs.map(([k, v]) => `  ${k.padEnd(width)} = ${v}`);
  if (spec.env.length > 0) lines.push(`  env = ${mapText(spec.env, "  ")}`);
  if (spec.headers.length > 0) lines.push(`  headers = ${mapText(spec.headers, "  ")}`);
  return `provider ${quote(spec.name)} {\n${lines.join("\n")}\n}\n`;
}

function requiredEntryText(name: string, indent: string, source = MCP_SOURCE): string {
  return [
    `${indent}${keyText(name)} = {`,
    `${indent}  source  = ${quote(source)}`,
    `${indent}  version = ${quote(">= 0.1.0")}`,
    `${indent}}`,
  ].join("\n");
}

interface Splice {
  start: number;
  end: number;
  insert: string;
}

function apply(bytes: Buffer, splices: Splice[]): string {
  const sorted = [...splices].sort((a, b) => b.start - a.start);
  let out = bytes;
  for (const s of sorted) {
    out = Buffer.concat([out.subarray(0, s.start), Buffer.from(s.insert, "utf8"), out.subarray(s.end)]);
  }
  return out.toString("utf8");
}

/** The column (0-based, in bytes) at which a line's first token starts. */
function indentOf(bytes: Buffer, offset: number): string {
  let start = offset;
  while (start > 0 && bytes[start - 1] !== 0x0a) start--;
  const line = bytes.subarray(start, offset).toString("utf8");
  return /^\s*/.exec(line)![0];
}

/** Every profile's `tools` tuple, for adding or removing the server's pattern. */
function profileToolLists(body: ReturnType<typeof parse>["body"]) {
  const out: Array<{ profile: string; expr: Extract<Expression, { kind: "Tuple" }> }> = [];
  for (const b of body.items) {
    if (b.kind !== "Block" || b.type !== "agent_profile") continue;
    for (const a of b.body.items) {
      if (a.kind === "Attribute" && a.name === "tools" && a.expr.kind === "Tuple")
        out.push({ profile: b.labels[0]?.value ?? "", expr: a.expr });
    }
  }
  return out;
}

/**
 * agent.hcl with the server added: its required_providers entry, its provider block at the
 * end, and `"<name>.*"` in every profile that lists its tools explicitly (as `claude mcp
 * add` makes a server's tools available at once). Returns the profiles that got it.
 */
export function addServer(
  source: string,
  file: string,
  spec: ServerSpec,
): { text: string; profiles: string[] } {
  return addProvider(source, file, {
    name: spec.name,
    source: MCP_SOURCE,
    block: providerBlockText(spec),
    tools: true,
  });
}

/** A provider for addProvider: its local name, source address and provider block text. */
export interface ProviderAddition {
  name: string;
  source: string;
  /** The provider block (ending in a newline), or "" for none. */
  block: string;
  /** Whether to list `"<name>.*"` in the profiles that list their tools. */
  tools: boolean;
}

/** agent.hcl with any provider added the way addServer adds a server (`agent add`). */
export function addProvider(
  source: string,
  file: string,
  spec: ProviderAddition,
): { text: string; profiles: string[] } {
  const { bytes, body } = parse(source, file);
  const taken = body.items.some(
    (i) =>
      (i.kind === "Block" && i.type === "provider" && i.labels[0]?.value === spec.name) ||
      (i.kind === "Block" &&
        i.type === "required_providers" &&
        i.body.items.some((a) => a.kind === "Attribute" && a.name === spec.name)),
  );
  if (taken)
    throw new EditError(
      `"${spec.name}" is already a provider in ${file}; remove it first or pick another name`,
    );
  const splices: Splice[] = [];
  const req = requiredBlock(body);
  if (req) {
    const close = req.closeBraceRange.start.byte;
    const last = req.body.items.at(-1);
    const indent = last ? indentOf(bytes, last.range.start.byte) : "  ";
    // Right after the last entry (or the opening brace), so the closing brace keeps its line.
    const at = last ? last.range.end.byte : req.openBraceRange.end.byte;
    splices.push({ start: at, end: at, insert: `\n${requiredEntryText(spec.name, indent, spec.source)}` });
    if (!last && bytes[close - 1] !== 0x0a) splices.push({ start: close, end: close, insert: "\n" });
  } else {
    splices.push({
      start: 0,
      end: 0,
      insert: `required_providers {\n${requiredEntryText(spec.name, "  ", spec.source)}\n}\n\n`,
    });
  }
  const profiles: string[] = [];
  for (const { profile, expr } of spec.tools ? profileToolLists(body) : []) {
    const pattern = quote(`${spec.name}.*`);
    const closeAt = expr.range.end.byte - 1; // the "]"
    const lastItem = expr.items.at(-1);
    if (!lastItem) splices.push({ start: closeAt, end: closeAt, insert: pattern });
    else {
      const multiline = expr.range.start.line !== expr.range.end.line;
      const between = bytes.subarray(lastItem.range.end.byte, closeAt).toString("utf8");
      const trailing = /^\s*,/.exec(between);
      if (trailing) {
        // A trailing comma stays the list's style: `a, b,` becomes `a, b, c,`.
        const at = lastItem.range.end.byte + Buffer.byteLength(trailing[0]);
        const lead = multiline ? `\n${indentOf(bytes, lastItem.range.start.byte)}` : " ";
        splices.push({ start: at, end: at, insert: `${lead}${pattern},` });
      } else {
        const lead = multiline ? `,\n${indentOf(bytes, lastItem.range.start.byte)}` : ", ";
        const at = lastItem.range.end.byte;
        splices.push({ start: at, end: at, insert: `${lead}${pattern}` });
      }
    }
    profiles.push(profile);
  }
  const end = bytes.length;
  const sep = end === 0 ? "" : bytes[end - 1] === 0x0a ? "\n" : "\n\n";
  if (spec.block !== "") splices.push({ start: end, end, insert: `${sep}${spec.block}` });
  return { text: apply(bytes, splices), profiles };
}

/** The byte range of an item together with its line, when it sits alone on its lines. */
function wholeLines(bytes: Buffer, r: Range): { start: number; end: number } {
  let start = r.start.byte;
  while (start > 0 && (bytes[start - 1] === 0x20 || bytes[start - 1] === 0x09)) start--;
  let end = r.end.byte;
  while (end < bytes.length && (bytes[end] === 0x20 || bytes[end] === 0x09)) end++;
  const ownLine = (start === 0 || bytes[start - 1] === 0x0a) && (end === bytes.length || bytes[end] === 0x0a);
  if (!ownLine) return { start: r.start.byte, end: r.end.byte };
  return { start, end: end < bytes.length ? end + 1 : end };
}

/** agent.hcl without the server: its entry, its block and its patterns in profiles. */
export function removeServer(source: string, file: string, name: string): string {
  const { bytes, body } = parse(source, file);
  const entry = listServers(source, file).find((e) => e.name === name);
  if (!entry) throw new EditError(`no MCP server named "${name}" in ${file} (agent mcp list shows them)`);
  const splices: Splice[] = [];
  const req = requiredBlock(body)!;
  const attr = req.body.items.find((a) => a.kind === "Attribute" && a.name === name)!;
  splices.push({ ...wholeLines(bytes, attr.range), insert: "" });
  const block = body.items.find(
    (b): b is Block => b.kind === "Block" && b.type === "provider" && b.labels[0]?.value === name,
  );
  if (block) {
    const r = wholeLines(bytes, block.range);
    // One blank line before the block goes with it.
    let start = r.start;
    if (start >= 2 && bytes[start - 1] === 0x0a && bytes[start - 2] === 0x0a) start -= 1;
    splices.push({ start, end: r.end, insert: "" });
  }
  for (const { expr } of profileToolLists(body)) {
    const items = expr.items;
    items.forEach((item, i) => {
      const s = stringOf(item);
      if (s === undefined || !(s === name || s.startsWith(`${name}.`))) return;
      // The item and the comma after it (or, for the last item, the comma before it).
      const next = items[i + 1];
      const prev = items[i - 1];
      if (next) splices.push({ start: item.range.start.byte, end: next.range.start.byte, insert: "" });
      else if (prev) splices.push({ start: prev.range.end.byte, end: item.range.end.byte, insert: "" });
      else splices.push({ start: item.range.start.byte, end: item.range.end.byte, insert: "" });
    });
  }
  return apply(bytes, splices);
}
