// The Gemini stream chunks (one GenerateContentResponse per SSE event) as zod schemas.
// Gemini's events carry no type field, so a chunk is read in two steps: the envelope, then
// each part on its own, so one malformed or new kind of part costs only that part. Objects
// are loose (fields the vendor adds pass through); optional wherever the adapter copes.
import * as z from "zod/mini";

const count = z.optional(z.number());

export const UsageMetadata = z.looseObject({
  promptTokenCount: count,
  candidatesTokenCount: count,
  cachedContentTokenCount: count,
  thoughtsTokenCount: count,
  toolUsePromptTokenCount: count,
  totalTokenCount: count,
  serviceTier: z.optional(z.string()),
  promptTokensDetails: z.optional(
    z.array(z.looseObject({ modality: z.optional(z.string()), tokenCount: count })),
  ),
});
export type UsageMetadata = z.infer<typeof UsageMetadata>;

export const Chunk = z.looseObject({
  error: z.optional(z.unknown()),
  responseId: z.optional(z.string()),
  modelVersion: z.optional(z.string()),
  // Read on its own (UsageMetadata), so a malformed count costs the usage, not the content.
  usageMetadata: z.optional(z.unknown()),
  promptFeedback: z.optional(z.looseObject({ blockReason: z.optional(z.string()) })),
  candidates: z.optional(
    z.array(
      z.looseObject({
        content: z.optional(z.looseObject({ parts: z.optional(z.array(z.unknown())) })),
        finishReason: z.optional(z.string()),
      }),
    ),
  ),
});

/** The part kinds the adapter reads; any other kind of part is reported by its field name. */
export const Part = z.looseObject({
  text: z.optional(z.string()),
  thought: z.optional(z.boolean()),
  thoughtSignature: z.optional(z.string()),
  functionCall: z.optional(
    z.looseObject({
      id: z.optional(z.string()),
      name: z.string(),
      args: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    }),
  ),
});
export type Part = z.infer<typeof Part>;

/** Fields that make a part one the adapter reads. */
export const PART_FIELDS: ReadonlySet<string> = new Set([
  "text",
  "thought",
  "thoughtSignature",
  "functionCall",
]);

/** A Google RPC error body ({"error": {code, message, status, details}}). */
export const ErrorBody = z.looseObject({
  error: z.optional(
    z.looseObject({
      code: z.optional(z.number()),
      status: z.optional(z.string()),
      message: z.optional(z.string()),
      details: z.optional(
        z.array(
          z.looseObject({
            "@type": z.optional(z.string()),
            retryDelay: z.optional(z.string()),
            reason: z.optional(z.string()),
          }),
        ),
      ),
    }),
  ),
});
