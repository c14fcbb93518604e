// The Responses API stream events the adapter reads, as zod schemas. Objects are loose
// (fields the vendor adds pass through) and fields the adapter can do without are optional,
// so only a frame that contradicts the documented shape is rejected. Reasoning items are
// re-serialised from the raw frame, never from the parsed value, so they stay verbatim.
import * as z from "zod/mini";

const str = z.optional(z.string());
const loose = z.looseObject({});

const details = z.optional(z.nullable(z.record(z.string(), z.unknown())));

/** The usage of a finished response (counts are read by `num`, which drops non-counts). */
export const Usage = z.looseObject({
  input_tokens: z.optional(z.unknown()),
  output_tokens: z.optional(z.unknown()),
  total_tokens: z.optional(z.unknown()),
  input_tokens_details: details,
  output_tokens_details: details,
});
export type Usage = z.infer<typeof Usage>;

/** The response object of created / in_progress / completed / incomplete / failed. */
export const Response = z.looseObject({
  model: str,
  service_tier: z.optional(z.nullable(z.string())),
  usage: z.optional(z.nullable(Usage)),
  incomplete_details: z.optional(z.nullable(z.looseObject({ reason: z.optional(z.nullable(z.string())) }))),
  error: z.optional(z.unknown()),
});

/** An output item, read again from `item` so a new item kind is reported, not rejected. */
export const OutputItem = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("message"), phase: z.optional(z.nullable(z.string())) }),
  z.looseObject({
    type: z.literal("function_call"),
    id: str,
    call_id: str,
    name: str,
    arguments: str,
  }),
  z.looseObject({
    type: z.literal("reasoning"),
    id: str,
    encrypted_content: z.optional(z.nullable(z.string())),
    summary: z.optional(z.array(loose)),
  }),
]);

/**
 * The summary of a reasoning item as summaryText reads it. A part whose text is not a
 * string reads as having none; a summary that is not a list, or an item that is not an
 * object, reads as no summary (never throws: the item itself is kept verbatim).
 */
const SummaryPart = z.catch(z.looseObject({ text: z.catch(str, undefined) }), {});
export const ReasoningSummary = z.catch(
  z.optional(z.looseObject({ summary: z.catch(z.optional(z.array(SummaryPart)), undefined) })),
  undefined,
);

const delta = { delta: z.string(), item_id: str };
const typedItem = z.looseObject({ type: z.string() });

/** Documented events the adapter has no use for: known, so never reported. */
const IGNORED = z.looseObject({
  type: z.enum([
    "response.queued",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
  ]),
});

export const StreamEvent = z.discriminatedUnion("type", [
  z.looseObject({ type: z.enum(["response.created", "response.in_progress"]), response: Response }),
  z.looseObject({ type: z.enum(["response.output_text.delta", "response.refusal.delta"]), ...delta }),
  z.looseObject({
    type: z.enum(["response.reasoning_summary_text.delta", "response.reasoning_text.delta"]),
    ...delta,
    summary_index: z.optional(z.number()),
    content_index: z.optional(z.number()),
  }),
  z.looseObject({
    type: z.enum(["response.output_item.added", "response.output_item.done"]),
    item: typedItem,
  }),
  z.looseObject({ type: z.literal("response.function_call_arguments.delta"), ...delta }),
  z.looseObject({ type: z.enum(["response.completed", "response.incomplete"]), response: Response }),
  z.looseObject({ type: z.literal("response.failed"), response: z.optional(Response) }),
  z.looseObject({ type: z.literal("error") }),
  IGNORED,
]);
export type StreamEvent = z.infer<typeof StreamEvent>;
