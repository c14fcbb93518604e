// The Messages API stream events the adapter reads, as zod schemas. Objects are loose
// (fields the vendor adds pass through) and every field the adapter can do without is
// optional, so only a frame that contradicts the documented shape is rejected.
import * as z from "zod/mini";

const str = z.optional(z.string());
// The Messages API sends null for counts a message_delta does not restate.
const count = z.optional(z.nullable(z.number()));

export const Usage = z.looseObject({
  input_tokens: count,
  output_tokens: count,
  cache_read_input_tokens: z.optional(z.nullable(z.number())),
  cache_creation_input_tokens: z.optional(z.nullable(z.number())),
  cache_creation: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
  output_tokens_details: z.optional(z.nullable(z.looseObject({ thinking_tokens: count }))),
  service_tier: z.optional(z.nullable(z.string())),
});
export type Usage = z.infer<typeof Usage>;

/** The content block a `content_block_start` opens; unknown kinds are kept as loose objects. */
export const ContentBlock = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: str }),
  z.looseObject({ type: z.literal("thinking"), thinking: str }),
  z.looseObject({ type: z.literal("redacted_thinking"), data: z.string() }),
  z.looseObject({ type: z.literal("tool_use"), id: z.string(), name: z.string() }),
]);

export const Delta = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text_delta"), text: z.string() }),
  z.looseObject({ type: z.literal("thinking_delta"), thinking: z.string() }),
  z.looseObject({ type: z.literal("signature_delta"), signature: z.string() }),
  z.looseObject({ type: z.literal("input_json_delta"), partial_json: z.string() }),
]);

const typed = z.looseObject({ type: z.string() });

export const StreamEvent = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("ping") }),
  z.looseObject({
    type: z.literal("message_start"),
    // usage is read on its own (Usage), so a bad count does not cost the event.
    message: z.looseObject({ model: str, usage: z.optional(z.unknown()) }),
  }),
  z.looseObject({
    type: z.literal("content_block_start"),
    index: z.number(),
    // Read again through ContentBlock, so a new block kind is reported, not rejected.
    content_block: typed,
  }),
  z.looseObject({ type: z.literal("content_block_delta"), index: z.number(), delta: typed }),
  z.looseObject({ type: z.literal("content_block_stop"), index: z.number() }),
  z.looseObject({
    type: z.literal("message_delta"),
    delta: z.looseObject({
      stop_reason: z.optional(z.nullable(z.string())),
      stop_sequence: z.optional(z.nullable(z.string())),
      stop_details: z.optional(
        z.nullable(
          z.looseObject({ type: str, category: str, explanation: z.optional(z.nullable(z.string())) }),
        ),
      ),
    }),
    usage: z.optional(z.unknown()),
  }),
  z.looseObject({ type: z.literal("message_stop") }),
  z.looseObject({ type: z.literal("error"), error: z.optional(z.unknown()) }),
]);
export type StreamEvent = z.infer<typeof StreamEvent>;

/** The body of an HTTP error or in-band `error` event. */
export const ErrorBody = z.looseObject({
  error: z.optional(z.looseObject({ type: str, message: str })),
});
