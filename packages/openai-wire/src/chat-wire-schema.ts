// The Chat Completions stream chunks every OpenAI-compatible dialect sends, as zod schemas.
// A chunk is read in steps (envelope, then the choice's delta, then each tool-call fragment
// and content part), so one malformed or new piece costs only that piece. Objects are loose
// (fields a server adds pass through); everything a dialect may leave out is optional.
import * as z from "zod/mini";

const text = z.optional(z.nullable(z.string()));

export const ChatChunk = z.looseObject({
  error: z.optional(z.unknown()),
  model: z.optional(z.nullable(z.string())),
  system_fingerprint: z.optional(z.nullable(z.string())),
  service_tier: z.optional(z.nullable(z.string())),
  // Mapped by the provider (counting rules differ per vendor); an object or nothing.
  usage: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
  choices: z.optional(
    z.nullable(
      z.array(
        z.looseObject({
          delta: z.optional(z.unknown()),
          message: z.optional(z.unknown()),
          finish_reason: text,
        }),
      ),
    ),
  ),
});

export const ChatDelta = z.looseObject({
  content: z.optional(z.nullable(z.union([z.string(), z.array(z.unknown())]))),
  reasoning_content: text,
  reasoning: text,
  refusal: text,
  tool_calls: z.optional(z.nullable(z.array(z.unknown()))),
});

export const ToolCallFragment = z.looseObject({
  index: z.optional(z.number()),
  id: text,
  function: z.optional(
    z.nullable(
      z.looseObject({
        name: text,
        // Text, or (some servers) the arguments object itself.
        arguments: z.optional(z.nullable(z.union([z.string(), z.record(z.string(), z.unknown())]))),
      }),
    ),
  ),
});

/** A piece of a Mistral-style content array. */
export const ContentPart = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({
    type: z.literal("thinking"),
    thinking: z.array(z.looseObject({ text: z.optional(z.string()) })),
  }),
]);

export const ErrorFrame = z.looseObject({
  error: z.union([
    z.string(),
    z.looseObject({
      code: z.optional(z.unknown()),
      type: z.optional(z.unknown()),
      message: z.optional(z.unknown()),
    }),
  ]),
});

/** A token count: a non-negative finite number; anything else reads as absent, never throws. */
export const Count = z.catch(z.optional(z.number().check(z.nonnegative())), undefined);

/** A `*_tokens_details` object; not an object (an array, a string) reads as absent. */
export const UsageDetails = z.catch(z.optional(z.nullable(z.record(z.string(), z.unknown()))), undefined);

/** The cache fields of `prompt_tokens_details`, typed; its other fields pass through as components. */
const PromptDetails = z.catch(
  z.optional(z.nullable(z.looseObject({ cached_tokens: Count, cache_write_tokens: Count }))),
  undefined,
);

/**
 * Chat Completions `usage`. Loose: fields a dialect adds pass through, and the `*_details`
 * objects' unknown numeric fields are kept as usage components. A field of the wrong type
 * reads as absent, so it can neither be billed nor turn on the cache split.
 */
export const ChatUsage = z.looseObject({
  prompt_tokens: Count,
  completion_tokens: Count,
  total_tokens: Count,
  prompt_tokens_details: PromptDetails,
  completion_tokens_details: UsageDetails,
});
