// What the conversation sent to models carries of oversized tool traffic, in both
// directions (docs/security/small-defects.md, "Oversized tool inputs and results"):
// - a tool call's input the model wrote (a 10 MB write_file) is kept whole in the session
//   file and given whole to the tool, but later requests carry its large strings cut to
//   their beginning and a note. The cut depends on the input alone, so every request of the
//   session carries the same bytes (prompt caching is unaffected) and a resume rebuilds it;
// - a tool's result larger than a share of the model's context window reaches the model
//   as its beginning and end around a note; the tool_result event keeps all of it.
// Sizes are UTF-8 bytes, the unit of the kernel's token estimate (4 bytes a token).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";

/** A tool input whose JSON is larger than this is shortened in the conversation. */
export const TOOL_INPUT_BUDGET_BYTES = 64 * 1024;

/** What an elided string keeps of its beginning, so the model still sees what it wrote. */
export const ELIDED_HEAD_BYTES = 1024;

/** The result budget when the model is not known (the kernel's own estimate: ~25k tokens). */
export const DEFAULT_RESULT_BUDGET_BYTES = 100 * 1024;

/** A result never takes more than this of a request, whatever the window (~100k tokens). */
export const MAX_RESULT_BUDGET_BYTES = 400 * 1024;

/** ...nor less than this, however small the window. */
export const MIN_RESULT_BUDGET_BYTES = 8 * 1024;

/** The least a result is sent when the results of one message share the budget. */
export const SHARED_RESULT_FLOOR_BYTES = 2 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** The first `max` bytes of `bytes`, ending on a character boundary. */
function headOf(bytes: Uint8Array, max: number): string {
  let end = Math.min(max, bytes.length);
  while (end > 0 && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

/** The last `max` bytes of `bytes`, starting on a character boundary. */
function tailOf(bytes: Uint8Array, max: number): string {
  let start = Math.max(0, bytes.length - max);
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return decoder.decode(bytes.subarray(start));
}

/** A long string as later requests carry it: its beginning, then a note saying what was left out. */
export function elidedString(value: string): string {
  const bytes = encoder.encode(value);
  const head = headOf(bytes, ELIDED_HEAD_BYTES);
  const left = bytes.length - bytesOf(head);
  return `${head}\n[… ${left} more bytes of this value are left out of the conversation to save context; the tool received all ${bytes.length} bytes]`;
}

/** Strings this short are never worth eliding (the note would not save much). */
const ELIDE_MIN_BYTES = 4 * ELIDED_HEAD_BYTES;

interface Leaf {
  readonly path: string;
  readonly bytes: number;
}

function stringLeaves(value: JsonValue, path: string, out: Leaf[]): void {
  if (typeof value === "string") {
    const bytes = bytesOf(value);
    if (bytes >= ELIDE_MIN_BYTES) out.push({ path, bytes });
  } else if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) stringLeaves(v, `${path}/${i}`, out);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) stringLeaves(v, `${path}/${k.replaceAll("/", "~1")}`, out);
  }
}

function replaceLeaves(value: JsonValue, path: string, chosen: ReadonlySet<string>): JsonValue {
  if (typeof value === "string") return chosen.has(path) ? elidedString(value) : value;
  if (Array.isArray(value)) return value.map((v, i) => replaceLeaves(v, `${path}/${i}`, chosen));
  if (value !== null && typeof value === "object") {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value))
      out[k] = replaceLeaves(v, `${path}/${k.replaceAll("/", "~1")}`, chosen);
    return out;
  }
  return value;
}

/**
 * A tool input as later requests carry it: unchanged within TOOL_INPUT_BUDGET_BYTES;
 * otherwise its largest strings elided (largest first, ties in document order) until it
 * fits; and when strings alone cannot make it fit (a huge array of numbers, huge keys), a
 * one-key object saying the input was left out.
 */
export function budgetToolInput(input: JsonObject): JsonObject {
  const size = bytesOf(JSON.stringify(input));
  if (size <= TOOL_INPUT_BUDGET_BYTES) return input;
  const leaves: Leaf[] = [];
  stringLeaves(input, "", leaves);
  // A stable order: by size, then where the string is.
  const order = leaves.map((l, i) => ({ ...l, i })).sort((a, b) => b.bytes - a.bytes || a.i - b.i);
  const chosen = new Set<string>();
  let left = size;
  for (const l of order) {
    if (left <= TOOL_INPUT_BUDGET_BYTES) break;
    chosen.add(l.path);
    // The note is about ELIDED_HEAD_BYTES + 150 bytes; JSON escaping may make the saving smaller.
    left -= l.bytes - ELIDED_HEAD_BYTES - 200;
  }
  const shortened = replaceLeaves(input, "", chosen) as JsonObject;
  if (bytesOf(JSON.stringify(shortened)) <= TOOL_INPUT_BUDGET_BYTES) return shortened;
  return {
    "[agent]": `this call's input (${size} bytes of JSON) is left out of the conversation to save context; the tool received it whole`,
  };
}

/**
 * A message as the conversation sent to models holds it: its tool calls' inputs within
 * budget (budgetToolInput). The same object when nothing needed shortening.
 */
export function budgetToolInputs(message: Message): Message {
  let changed = false;
  const content = message.content.map((b): ContentBlock => {
    if (b.block.case !== "toolUse" || !b.block.value.input) return b;
    const input = budgetToolInput(b.block.value.input);
    if (input === b.block.value.input) return b;
    changed = true;
    return { ...b, block: { case: "toolUse", value: { ...b.block.value, input } } };
  });
  return changed ? { ...message, content } : message;
}

/**
 * How many bytes of a tool result's text a model with this context window is sent: a
 * quarter of the window (at 4 bytes a token, as many bytes as the window has tokens),
 * between MIN_RESULT_BUDGET_BYTES and MAX_RESULT_BUDGET_BYTES; DEFAULT_RESULT_BUDGET_BYTES
 * when the model is not known. The results of one message (`shares` parallel calls) split
 * that quarter, each at least SHARED_RESULT_FLOOR_BYTES: four huge results together must
 * not fill the window that one of them may take a quarter of.
 */
export function resultBudgetBytes(contextWindow: bigint | number | undefined, shares = 1): number {
  const window = contextWindow === undefined ? 0 : Number(contextWindow);
  const total = !(window > 0)
    ? DEFAULT_RESULT_BUDGET_BYTES
    : Math.min(MAX_RESULT_BUDGET_BYTES, Math.max(MIN_RESULT_BUDGET_BYTES, Math.floor(window)));
  const n = Number.isFinite(shares) && shares > 1 ? Math.floor(shares) : 1;
  return n === 1 ? total : Math.max(SHARED_RESULT_FLOOR_BYTES, Math.floor(total / n));
}

/**
 * A result's text within `budget` bytes: unchanged when it fits; otherwise its first two
 * thirds and last third of the budget around a note saying how much was left out (the end
 * is kept because that is where commands report how they ended).
 */
export function fitResultText(text: string, budget: number): string {
  const total = bytesOf(text);
  if (total <= budget) return text;
  const bytes = encoder.encode(text);
  // Room for the note itself, so the whole stays within the budget.
  const room = Math.max(0, budget - 300);
  const head = headOf(bytes, Math.floor((room * 2) / 3));
  const tail = tailOf(bytes, room - bytesOf(head));
  const omitted = total - bytesOf(head) - bytesOf(tail);
  return `${head}\n\n[… ${omitted} of this result's ${total} bytes are left out here to fit the model's context window; the session file keeps the whole result. Ask for a narrower result (a range, a filter) to see the rest.]\n\n${tail}`;
}
