// Deterministic HCL output for machine-written files such as the lock file.
// Layout follows `terraform fmt`: two-space indentation, "=" aligned across
// consecutive single-line attributes, a blank line before each block. Writing
// the same input always yields the same bytes, and parsing the output gives
// back the same values (strings are NFC-normalised on the way out, as the
// parser normalises them on the way in).

import { IDENT_CONTINUE, IDENT_START } from "./ident-table.ts";
import { firstLoneSurrogate, graphemes } from "./source.ts";
import { isObject, type Value } from "./value.ts";

export interface WriterBlock {
  type: string;
  labels?: readonly string[];
  /** Written in insertion order unless `sortAttributes` is set. */
  attributes?: Readonly<Record<string, Value>>;
  blocks?: readonly WriterBlock[];
}

export interface WriterDocument {
  /** Comment lines written first, each as "# line". */
  header?: readonly string[];
  attributes?: Readonly<Record<string, Value>>;
  blocks?: readonly WriterBlock[];
}

export interface WriteOptions {
  /** Sort each body's attributes by name. */
  sortAttributes?: boolean;
  /** Sort the keys of object values. */
  sortObjectKeys?: boolean;
  /** Sort each body's blocks by type, then labels (the sort is stable). */
  sortBlocks?: boolean;
}

const IDENT = new RegExp(`^[${IDENT_START}][${IDENT_CONTINUE}]*$`, "u");
const INDENT = "  ";

/**
 * Renders a document. Throws TypeError on input that cannot be written (an
 * invalid attribute name, a non-finite number, a lone surrogate, undefined).
 */
export function writeHcl(doc: WriterDocument, options: WriteOptions = {}): string {
  const lines: string[] = [];
  for (const line of doc.header ?? []) {
    if (/[\r\n]/.test(line)) throw new TypeError("A header comment line cannot contain a line break.");
    lines.push(line === "" ? "#" : `# ${line}`);
  }
  const body = bodyLines(doc.attributes ?? {}, doc.blocks ?? [], "", options);
  if (lines.length > 0 && body.length > 0) lines.push("");
  lines.push(...body);
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/** Renders one value as an expression; nested lines are indented from column 1. */
export function writeValue(value: Value, options: WriteOptions = {}): string {
  return valueText(value, "", options, "value");
}

function bodyLines(
  attrs: Readonly<Record<string, Value>>,
  blocks: readonly WriterBlock[],
  indent: string,
  options: WriteOptions,
): string[] {
  const lines: string[] = [];
  let names = Object.keys(attrs);
  if (options.sortAttributes === true) names = names.sort(compareStrings);
  const entries = names.map((name): [string, Value] => {
    if (!IDENT.test(name)) throw new TypeError(`"${name}" is not a valid HCL attribute name.`);
    return [name, attrs[name]!];
  });
  lines.push(...alignedLines(entries, indent, options));

  const ordered = options.sortBlocks === true ? [...blocks].sort(compareBlocks) : blocks;
  for (const block of ordered) {
    if (lines.length > 0) lines.push("");
    if (!IDENT.test(block.type)) throw new TypeError(`"${block.type}" is not a valid HCL block type.`);
    const header = [block.type, ...(block.labels ?? []).map((l) => quote(l, "block label"))].join(" ");
    const inner = bodyLines(block.attributes ?? {}, block.blocks ?? [], indent + INDENT, options);
    if (inner.length === 0) {
      lines.push(`${indent}${header} {}`);
    } else {
      lines.push(`${indent}${header} {`, ...inner, `${indent}}`);
    }
  }
  return lines;
}

/**
 * `name = value` lines with "=" aligned across runs of single-line values;
 * a multi-line value is written unpadded and ends the run.
 */
function alignedLines(entries: Array<[string, Value]>, indent: string, options: WriteOptions): string[] {
  const rendered = entries.map(([name, v]) => [name, valueText(v, indent, options, name)] as const);
  const lines: string[] = [];
  let i = 0;
  while (i < rendered.length) {
    let j = i;
    while (j < rendered.length && !rendered[j]![1].includes("\n")) j++;
    if (j === i) {
      const [name, text] = rendered[i]!;
      lines.push(`${indent}${name} = ${text}`);
      i++;
      continue;
    }
    const width = Math.max(...rendered.slice(i, j).map(([name]) => graphemes(name).length));
    for (const [name, text] of rendered.slice(i, j)) {
      lines.push(`${indent}${name}${" ".repeat(width - graphemes(name).length)} = ${text}`);
    }
    i = j;
  }
  return lines;
}

function valueText(v: Value, indent: string, options: WriteOptions, path: string): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new TypeError(`${path}: HCL cannot represent the number ${v}.`);
    return Object.is(v, -0) ? "-0" : String(v);
  }
  if (typeof v === "string") return quote(v, path);
  const inner = indent + INDENT;
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    if (v.every((x) => x === null || typeof x !== "object")) {
      return `[${v.map((x, i) => valueText(x, inner, options, `${path}[${i}]`)).join(", ")}]`;
    }
    const items = v.map((x, i) => `${inner}${valueText(x, inner, options, `${path}[${i}]`)},`);
    return `[\n${items.join("\n")}\n${indent}]`;
  }
  if (isObject(v)) {
    // Sort on the normalised keys, since that is the order they read back in.
    const keys = Object.keys(v).map((k) => [k, k.normalize("NFC")] as const);
    if (keys.length === 0) return "{}";
    if (options.sortObjectKeys === true) keys.sort((a, b) => compareStrings(a[1], b[1]));
    const entries = keys.map(([k]): [string, Value] => [quote(k, `${path} key`), v[k]!]);
    return `{\n${alignedLines(entries, inner, options).join("\n")}\n${indent}}`;
  }
  throw new TypeError(`${path}: ${typeof v} is not an HCL value.`);
}

/** A quoted string literal that parses back to exactly `s` (after NFC). */
function quote(s: string, path: string): string {
  if (typeof s !== "string") throw new TypeError(`${path}: expected a string.`);
  if (firstLoneSurrogate(s) >= 0) throw new TypeError(`${path}: the string contains a lone surrogate.`);
  let out = '"';
  for (const ch of s.normalize("NFC")) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f) out += `\\u${cp.toString(16).toUpperCase().padStart(4, "0")}`;
    else out += ch;
  }
  // Template sequences are escaped by doubling their first character.
  return `${out.replace(/\$\{/g, () => "$${").replace(/%\{/g, () => "%%{")}"`;
}

function compareBlocks(a: WriterBlock, b: WriterBlock): number {
  const ka = [a.type, ...(a.labels ?? []).map((l) => l.normalize("NFC"))];
  const kb = [b.type, ...(b.labels ?? []).map((l) => l.normalize("NFC"))];
  for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
    const c = compareStrings(ka[i]!, kb[i]!);
    if (c !== 0) return c;
  }
  return ka.length - kb.length;
}

/** Plain UTF-16 code unit order, independent of locale. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
