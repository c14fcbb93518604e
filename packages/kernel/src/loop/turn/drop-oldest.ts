// The last resort of compaction: when no compactor could summarise the conversation, the
// oldest turns are dropped so the next request fits the window, and a note in their place
// tells the model what happened (and what the session was first asked). Pure: compaction.ts
// persists the result like any rewrite.
import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";

/** Characters of the session's first request kept in the note. */
const FIRST_REQUEST_CHARS = 2_000;

export interface Dropped {
  readonly history: Message[];
  readonly droppedMessages: number;
}

const hasToolResults = (m: Message) => m.content.some((b) => b.block.case === "toolResult");
const textOf = (m: Message) =>
  m.content.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : [])).join("\n");

/**
 * Keeps the newest messages that fit `goalTokens` (as `measure` counts them), starting at a
 * message where no tool call is left without its result: an assistant message, or a user
 * message that carries no tool result. When even the newest such tail is larger, that tail
 * (the caller decides whether it still fits). Undefined when nothing can be dropped.
 */
export function dropOldestTurns(
  history: readonly Message[],
  goalTokens: number,
  measure: (messages: readonly Message[]) => number,
  why: string,
): Dropped | undefined {
  const cuts: number[] = [];
  for (let i = 1; i < history.length; i++) {
    const m = history[i]!;
    if (m.role === Role.ASSISTANT || (m.role === Role.USER && !hasToolResults(m))) cuts.push(i);
  }
  if (cuts.length === 0) return undefined;
  // The note quotes the session's first request when there is room for it.
  for (const quote of [true, false]) {
    for (const c of cuts) {
      const kept = withNote(history, c, why, quote);
      if (measure(kept) <= goalTokens) return { history: kept, droppedMessages: c };
    }
  }
  const newest = cuts.at(-1)!;
  return { history: withNote(history, newest, why, false), droppedMessages: newest };
}

function withNote(history: readonly Message[], cut: number, why: string, quote: boolean): Message[] {
  const first = history.find((m) => m.role === Role.USER && !hasToolResults(m));
  const request = first && quote ? textOf(first).slice(0, FIRST_REQUEST_CHARS) : "";
  const note = [
    `[The ${cut} oldest messages of this conversation were dropped to fit the model's context window: ${why}.`,
    request ? ` The session's first request was:\n${request}` : "",
    "]",
  ].join("");
  const noteMessage = create(MessageSchema, {
    role: Role.USER,
    content: [{ block: { case: "text", value: { text: note } } }],
  });
  const tail = history.slice(cut);
  const head = tail[0]!;
  // Vendors want the conversation to open with the user: the note joins a first user
  // message, or comes before a first assistant one.
  if (head.role === Role.USER)
    return [{ ...head, content: [...noteMessage.content, ...head.content] }, ...tail.slice(1)];
  return [noteMessage, ...tail];
}
