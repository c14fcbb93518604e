// ask_user's options as the terminal offers them: the question's prompt lists them as a
// numbered list, and typing an option's number answers with that option, as in Claude
// Code. The labels are read from the prompt itself, so any tool that asks with a
// numbered list gets the same.
import type { RenderNode, RenderTree } from "@pluggableharness/protocol/render";

/** The label of each item of the prompt's first numbered list (an item's first text). */
export function optionLabels(prompt: RenderTree | undefined): string[] {
  const firstText = (n: RenderNode | undefined): string | undefined => {
    const v = n?.node;
    if (v?.case === "text") return v.value.content;
    if (v?.case === "group") for (const c of v.value.children) return firstText(c);
    return undefined;
  };
  const find = (n: RenderNode | undefined): string[] | undefined => {
    const v = n?.node;
    if (v?.case === "list" && v.value.ordered) return v.value.items.map((i) => firstText(i)?.trim() ?? "");
    if (v?.case === "group" || v?.case === "collapsible")
      for (const c of v.value.children) {
        const found = find(c);
        if (found) return found;
      }
    return undefined;
  };
  return find(prompt?.root) ?? [];
}

/** The option a typed answer picks by its number, if it is just a number in range. */
export function pickedOption(
  text: string,
  labels: readonly string[],
): { label: string; index: number } | undefined {
  const m = /^\s*(\d{1,2})[.)]?\s*$/.exec(text);
  if (!m) return undefined;
  const index = Number(m[1]) - 1;
  const label = labels[index];
  return label ? { label, index } : undefined;
}
