// A render tree cut to a size budget. A plan item's Preview is shown to a human deciding
// on the call and stored with the plan; the diff of a 10 MB new file is neither readable
// nor worth storing a second time (the input already is). Text is kept in document order
// until the budget is spent; the rest is dropped and a note says how much.
import { create } from "@bufbuild/protobuf";
import {
  type RenderNode,
  RenderNodeSchema,
  type RenderTree,
  TextStyle,
} from "@pluggableharness/protocol/render";

/** Characters of text a stored or shown Preview keeps. */
export const PREVIEW_BUDGET_CHARS = 64 * 1024;

/** `tree` unchanged when its text fits `budget` characters, else a cut copy ending in a note. */
export function capRenderTree(tree: RenderTree, budget = PREVIEW_BUDGET_CHARS): RenderTree {
  let left = budget;
  let dropped = 0;
  const take = (text: string): string => {
    if (text.length <= left) {
      left -= text.length;
      return text;
    }
    const kept = text.slice(0, Math.max(0, left));
    dropped += text.length - kept.length;
    left = 0;
    return kept;
  };
  const nodes = (list: readonly RenderNode[]): RenderNode[] => list.flatMap((n) => cut(n) ?? []);
  const cut = (n: RenderNode): RenderNode | undefined => {
    const v = n.node;
    if (left <= 0 && v.case !== undefined) {
      dropped += size(n);
      return undefined;
    }
    switch (v.case) {
      case "text":
        return create(RenderNodeSchema, {
          node: { case: "text", value: { ...v.value, content: take(v.value.content) } },
        });
      case "codeBlock":
        return create(RenderNodeSchema, {
          node: { case: "codeBlock", value: { ...v.value, content: take(v.value.content) } },
        });
      case "diff": {
        const hunks = [];
        for (const h of v.value.hunks) {
          if (left <= 0) {
            for (const l of h.lines) dropped += l.text.length;
            continue;
          }
          const lines = [];
          for (const l of h.lines) {
            if (left <= 0) dropped += l.text.length;
            else lines.push({ ...l, text: take(l.text) });
          }
          hunks.push({ ...h, lines });
        }
        return create(RenderNodeSchema, { node: { case: "diff", value: { ...v.value, hunks } } });
      }
      case "list":
        return create(RenderNodeSchema, {
          node: { case: "list", value: { ...v.value, items: nodes(v.value.items) } },
        });
      case "group":
        return create(RenderNodeSchema, {
          node: { case: "group", value: { ...v.value, children: nodes(v.value.children) } },
        });
      case "collapsible":
        return create(RenderNodeSchema, {
          node: {
            case: "collapsible",
            value: { ...v.value, summary: take(v.value.summary), children: nodes(v.value.children) },
          },
        });
      default:
        left -= size(n);
        return n;
    }
  };
  if (!tree.root || size(tree.root) <= budget) return tree;
  const root = cut(tree.root);
  const note = create(RenderNodeSchema, {
    node: {
      case: "text",
      value: {
        content: `… the rest of this preview (${dropped.toLocaleString("en-US")} more characters) is not shown`,
        style: TextStyle.DIM,
      },
    },
  });
  return {
    ...tree,
    root: create(RenderNodeSchema, {
      node: { case: "group", value: { children: [...(root ? [root] : []), note] } },
    }),
  };
}

/** Characters of text a node holds (what the budget counts). */
function size(n: RenderNode): number {
  const v = n.node;
  switch (v.case) {
    case "text":
      return v.value.content.length;
    case "codeBlock":
      return v.value.content.length;
    case "diff":
      return v.value.hunks.reduce((a, h) => a + h.lines.reduce((b, l) => b + l.text.length, 0), 0);
    case "table":
      return v.value.rows.reduce((a, r) => a + r.cells.reduce((b, c) => b + c.length, 0), 0);
    case "list":
      return v.value.items.reduce((a, c) => a + size(c), 0);
    case "group":
      return v.value.children.reduce((a, c) => a + size(c), 0);
    case "collapsible":
      return v.value.summary.length + v.value.children.reduce((a, c) => a + size(c), 0);
    default:
      return 0;
  }
}
