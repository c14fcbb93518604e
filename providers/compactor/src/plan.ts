// What a compaction keeps and what it summarises, decided on the canonical messages alone
// (no IO): the cut always falls on a message boundary where no tool call is left without
// its result, so every kept assistant message stays whole — its tool_use blocks, their
// results in the next message, and its thinking with the vendor's signature (Anthropic
// thinking signatures, Gemini thought signatures, OpenAI encrypted reasoning) exactly as
// the vendor sent them. The summarised part is turned into plain text, which every vendor
// accepts in any position.
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";

/** Roles as on the wire (content.v1.Role), without loading the generated enum here. */
export const USER = 1;
export const ASSISTANT = 2;

const encoder = new TextEncoder();
const bytes = (s: string) => encoder.encode(s).length;

/** The kernel's fallback estimate (UTF-8 bytes / 4) of one message. */
export function messageTokens(m: Message): number {
  let n = 0;
  for (const b of m.content) {
    const v = b.block;
    if (v.case === "text" || v.case === "thinking") n += bytes(v.value.text);
    else if (v.case === "toolUse") n += bytes(JSON.stringify(v.value.input ?? {})) + bytes(v.value.name);
    else if (v.case === "toolResult") {
      for (const c of v.value.content) if (c.block.case === "text") n += bytes(c.block.value.text);
    }
  }
  return Math.ceil(n / 4);
}

const hasResults = (m: Message) => m.content.some((b) => b.block.case === "toolResult");

/**
 * Where the kept tail may start: an assistant message (its results follow it), or a user
 * message that carries no tool result (a prompt). Never index 0: something must be left to
 * summarise.
 */
export function cutPoints(history: readonly Message[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < history.length; i++) {
    const m = history[i]!;
    if (m.role === ASSISTANT || (m.role === USER && !hasResults(m))) out.push(i);
  }
  return out;
}

/**
 * The index the kept tail starts at: the earliest cut point whose tail fits `keepTokens`
 * (scaled by `scale`, the kernel's count over the estimate); when even the newest cut point's
 * tail is larger, that one (the caller shortens the tail's tool output). Undefined when there
 * is no cut point at all.
 */
export function chooseCut(history: readonly Message[], keepTokens: number, scale = 1): number | undefined {
  const points = cutPoints(history);
  if (points.length === 0) return undefined;
  const suffix: number[] = new Array(history.length + 1).fill(0);
  for (let i = history.length - 1; i >= 0; i--)
    suffix[i] = suffix[i + 1]! + messageTokens(history[i]!) * scale;
  for (const p of points) if (suffix[p]! <= keepTokens) return p;
  return points.at(-1);
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} characters left out …]\n${text.slice(-tail)}`;
}

function blockText(b: ContentBlock, maxChars: number): string | undefined {
  const v = b.block;
  switch (v.case) {
    case "text":
      return v.value.text;
    case "toolUse":
      return `[tool call ${v.value.name} ${clip(JSON.stringify(v.value.input ?? {}), maxChars)}]`;
    case "toolResult": {
      const t = v.value.content
        .map((c) => (c.block.case === "text" ? c.block.value.text : `(${c.block.case})`))
        .join("\n");
      return `[tool result${v.value.isError ? " (error)" : ""}]\n${clip(t, maxChars)}`;
    }
    case "image":
      return "(an image)";
    case "document":
      return "(a document)";
    // Reasoning is the model's private scratch work (and may be encrypted): left out.
    default:
      return undefined;
  }
}

/** The messages as a plain transcript, long tool output clipped to `maxChars` each. */
export function transcript(messages: readonly Message[], maxChars: number): string {
  const parts: string[] = [];
  for (const m of messages) {
    const who = m.role === ASSISTANT ? "Assistant" : "User";
    const body = m.content.flatMap((b) => {
      const t = blockText(b, maxChars);
      return t === undefined || t === "" ? [] : [t];
    });
    if (body.length > 0) parts.push(`${who}:\n${body.join("\n")}`);
  }
  return parts.join("\n\n");
}

/** Splits a transcript into pieces of at most `maxChars`, at paragraph boundaries where possible. */
export function chunks(text: string, maxChars: number): string[] {
  if (text.length <= maxChars) return [text];
  const out: string[] = [];
  let rest = text;
  while (rest.length > maxChars) {
    let at = rest.lastIndexOf("\n\n", maxChars);
    if (at < maxChars / 2) at = maxChars;
    out.push(rest.slice(0, at));
    rest = rest.slice(at).replace(/^\n+/, "");
  }
  if (rest) out.push(rest);
  return out;
}

export const SUMMARY_HEADER =
  "[Compacted conversation] The earlier part of this session was summarised to fit the context window. Summary:";

function textBlock(text: string): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: { case: "text", value: { $typeName: "pluggableharness.content.v1.TextBlock", text } },
  };
}

/**
 * The new history: the summary as a user message, then the kept tail. A tail that starts
 * with a prompt gets the summary in front of the prompt, in the same message (so roles
 * still alternate); one that starts with an assistant message follows the summary.
 */
export function rewrite(summary: string, tail: readonly Message[], id: string): Message[] {
  const text = `${SUMMARY_HEADER}\n\n${summary}`;
  const first = tail[0];
  if (first && first.role === USER) {
    return [{ ...first, content: [textBlock(text), ...first.content] }, ...tail.slice(1)];
  }
  const summaryMessage: Message = {
    $typeName: "pluggableharness.content.v1.Message",
    role: USER,
    content: [textBlock(text)],
    id,
  } as Message;
  return [summaryMessage, ...tail];
}

/**
 * The tail shortened to `targetTokens` by clipping its longest tool results (their text
 * only: tool_use blocks, thinking and signatures are never touched); what cannot be
 * summarised meaningfully (raw output) is truncated, as the context spec allows.
 */
export function shortenTail(tail: readonly Message[], targetTokens: number): Message[] {
  let total = tail.reduce((n, m) => n + messageTokens(m), 0);
  if (total <= targetTokens) return [...tail];
  const out = tail.map((m) => ({ ...m, content: [...m.content] }));
  // Largest results first, each cut to what the remaining excess allows (at least 200 chars kept).
  const results: Array<{ mi: number; bi: number; size: number }> = [];
  for (const [mi, m] of out.entries()) {
    for (const [bi, b] of m.content.entries()) {
      if (b.block.case === "toolResult")
        results.push({ mi, bi, size: messageTokens({ ...m, content: [b] }) });
    }
  }
  results.sort((a, b) => b.size - a.size);
  for (const r of results) {
    if (total <= targetTokens) break;
    const b = out[r.mi]!.content[r.bi]!;
    if (b.block.case !== "toolResult") continue;
    const excess = total - targetTokens;
    const keepChars = Math.max(200, (r.size - excess) * 4);
    const value = b.block.value;
    const content = value.content.map((c) =>
      c.block.case === "text" ? textBlock(clip(c.block.value.text, keepChars)) : c,
    );
    const next = {
      ...b,
      block: { case: "toolResult" as const, value: { ...value, content } },
    } as ContentBlock;
    out[r.mi]!.content[r.bi] = next;
    total = total - r.size + messageTokens({ ...out[r.mi]!, content: [next] });
  }
  return out;
}
