// Delta merging for the provider → kernel stream. A vendor's network read often carries
// hundreds of SSE frames; sent one StreamEvent each, every text delta pays for a port
// message and a decode in the kernel. Adjacent text deltas (or thinking deltas, or argument
// fragments of the same tool call) that are already buffered when the next event is asked
// for therefore travel as one StreamEvent. Nothing waits for more input: when the source
// has no further event ready before the event loop's next check phase (it is waiting for
// the network), the held text goes out at once. A source that never waits (the body is
// already buffered faster than it is parsed) must not hide the answer either: the first
// delta of the stream goes out alone, and a run is released once it has been held for
// MAX_HOLD_MS, so what the user sees keeps flowing. Order is kept and nothing is dropped:
// any other event, a different delta kind or call, the end of the source or its failure
// releases the held text first.
import type { StreamEventInit } from "./events.ts";

/** A merged delta never grows beyond this many characters (keeps gRPC messages small). */
export const MAX_MERGED_CHARS = 64 * 1024;

/** A run is released once held this long, though more is buffered (half a 60 Hz frame). */
export const MAX_HOLD_MS = 8;

export interface MergeOptions {
  /** Characters a merged delta may hold (default MAX_MERGED_CHARS). */
  maxChars?: number;
  /** Milliseconds a run may be held while the source keeps delivering (default MAX_HOLD_MS). */
  maxHoldMs?: number;
  /** The clock runs are timed with (default performance.now). */
  now?: () => number;
}

const TICK: unique symbol = Symbol("tick");

/** Events that can merge share a key: the delta kind, and for tool arguments the call id. */
function mergeKey(e: StreamEventInit): string | undefined {
  const v = e.event;
  if (v?.case === "textDelta" || v?.case === "thinkingDelta") return v.case;
  if (v?.case === "toolCallDelta") return `toolCallDelta\u0000${v.value.id ?? ""}`;
  return undefined;
}

function textOf(e: StreamEventInit): string {
  const v = e.event;
  if (v?.case === "toolCallDelta") return v.value.argumentsFragment ?? "";
  return (v?.value as { text?: string } | undefined)?.text ?? "";
}

/** A text delta that opens a new block heads a run but never joins the one before it. */
function startsBlock(e: StreamEventInit): boolean {
  const v = e.event;
  return v?.case === "textDelta" && v.value.startsBlock === true;
}

/** `first` with `text` as its whole text (a block start and its vendor state are kept). */
function withText(first: StreamEventInit, text: string): StreamEventInit {
  const v = first.event;
  if (v?.case === "toolCallDelta")
    return { event: { case: "toolCallDelta", value: { id: v.value.id ?? "", argumentsFragment: text } } };
  if (v?.case === "textDelta") return { event: { case: "textDelta", value: { ...v.value, text } } };
  return { event: { case: v?.case as "textDelta" | "thinkingDelta", value: { text } } } as StreamEventInit;
}

/**
 * Yields `source`'s events with runs of adjacent, already-available deltas of one kind
 * (and one tool call) merged into one event each. See the module comment for when a run ends.
 */
export async function* mergeBufferedDeltas(
  source: AsyncIterable<StreamEventInit>,
  options: MergeOptions = {},
): AsyncGenerator<StreamEventInit> {
  const maxChars = options.maxChars ?? MAX_MERGED_CHARS;
  const maxHoldMs = options.maxHoldMs ?? MAX_HOLD_MS;
  const now = options.now ?? (() => performance.now());
  const it = source[Symbol.asyncIterator]();
  // No delta has gone out yet: the first one is the answer's first token, never held.
  let firstDelta = true;
  // When the held run began (its first event's arrival).
  let heldSince = 0;
  // The held run: its first event as received, and the texts of the ones merged into it.
  let first: StreamEventInit | undefined;
  let heldKey: string | undefined;
  let parts: string[] = [];
  let size = 0;
  // Resolves at the next check phase; one per held run, not one per event.
  let tick: Promise<typeof TICK> | undefined;
  const nextTick = (): Promise<typeof TICK> =>
    new Promise((resolve) =>
      setImmediate(() => {
        tick = undefined;
        resolve(TICK);
      }),
    );
  const release = (): StreamEventInit => {
    const out = parts.length === 0 ? first! : withText(first!, textOf(first!) + parts.join(""));
    first = undefined;
    heldKey = undefined;
    parts = [];
    size = 0;
    return out;
  };
  let finished = false;
  try {
    for (;;) {
      const pending = it.next();
      let result: IteratorResult<StreamEventInit>;
      try {
        if (first) {
          tick ??= nextTick();
          const raced = await Promise.race([pending, tick]);
          if (raced === TICK) {
            // The source is waiting for input: send what is held now.
            yield release();
            result = await pending;
          } else result = raced;
        } else result = await pending;
      } catch (err) {
        if (first) yield release();
        finished = true;
        throw err;
      }
      if (result.done) {
        finished = true;
        if (first) yield release();
        return;
      }
      const event = result.value;
      const key = mergeKey(event);
      if (key !== undefined && first && key === heldKey && !startsBlock(event)) {
        const text = textOf(event);
        if (size + text.length <= maxChars) {
          parts.push(text);
          size += text.length;
          if (now() - heldSince >= maxHoldMs) yield release();
          continue;
        }
      }
      if (first) yield release();
      if (key !== undefined) {
        if (firstDelta) {
          firstDelta = false;
          yield event;
          continue;
        }
        first = event;
        heldKey = key;
        size = textOf(event).length;
        heldSince = now();
        continue;
      }
      yield event;
    }
  } finally {
    // A consumer that stopped early (cancellation) closes the source too.
    if (!finished) await it.return?.();
  }
}
