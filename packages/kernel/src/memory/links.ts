// The memory protocol's write-side rules that belong to the kernel, so that every memory
// provider (first-party or not) gets them without reimplementing them: record ids are
// kebab-case slugs made unique within a provider by a numeric suffix, `[[name]]`
// references in a record's text are parsed into `links`, and when a record's text is
// shown each reference becomes a `link` render node pointing at the record it names.
import { create } from "@bufbuild/protobuf";
import { MEMORY_ID_MAX, memorySlug } from "@pluggableharness/plugin-sdk/memory-ids";
import { type RenderNode, RenderNodeSchema, TextStyle } from "@pluggableharness/protocol/render";

export { isMemorySlug, memorySlug } from "@pluggableharness/plugin-sdk/memory-ids";

const LINK = /\[\[([^\]\n]{1,128})\]\]/g;

/** `base`, else `base-2`, `base-3`, ...: the first id `taken` says is free. */
export async function uniqueMemorySlug(
  base: string,
  taken: (id: string) => Promise<boolean>,
  limit = 1_000,
): Promise<string> {
  if (!(await taken(base))) return base;
  for (let n = 2; n <= limit; n++) {
    const id = `${base}-${n}`.slice(-MEMORY_ID_MAX);
    if (!(await taken(id))) return id;
  }
  throw new Error(`no free id after ${limit} tries for "${base}"`);
}

/** The records `text` references with `[[name]]`, as slugs, in first-appearance order. */
export function parseMemoryLinks(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(LINK)) {
    const id = memorySlug(m[1]!);
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

/** Where a link to a record points: `memory:<id>` (the provider's namespace is the reader's). */
export function memoryLinkUrl(id: string): string {
  return `memory:${id}`;
}

const text = (content: string, style = TextStyle.UNSPECIFIED): RenderNode =>
  create(RenderNodeSchema, { node: { case: "text", value: { content, style } } });

/**
 * A record's text as render nodes: one group per line, in which each `[[name]]` is a link
 * node (text: the name as written, url: memory:<slug>) between text runs. A line without
 * references is a plain text node. Frontends show a group made only of text and links as
 * one line.
 */
export function memoryContentNode(content: string): RenderNode {
  const lines = content.split("\n").map((line): RenderNode => {
    const parts: RenderNode[] = [];
    let at = 0;
    for (const m of line.matchAll(LINK)) {
      if (m.index > at) parts.push(text(line.slice(at, m.index)));
      const name = m[1]!.trim();
      parts.push(
        create(RenderNodeSchema, {
          node: { case: "link", value: { text: name, url: memoryLinkUrl(memorySlug(name)) } },
        }),
      );
      at = m.index + m[0].length;
    }
    if (parts.length === 0) return text(line);
    if (at < line.length) parts.push(text(line.slice(at)));
    return create(RenderNodeSchema, { node: { case: "group", value: { children: parts } } });
  });
  return lines.length === 1
    ? lines[0]!
    : create(RenderNodeSchema, { node: { case: "group", value: { children: lines } } });
}
