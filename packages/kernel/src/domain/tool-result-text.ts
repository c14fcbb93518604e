// What the model reads for a tool's result payload (docs/decisions/tools.md). The persisted payload stays the exact JSON the tool returned; this is only the
// model-facing rendering, the same for every vendor:
// - a schema naming a model_text_field (a top-level string of output_schema) has that
//   value read verbatim, real newlines and quotes, after one line of compact JSON holding
//   the other properties (model_omitted_fields left out: they restate the text);
// - without one, the whole payload is compact JSON;
// - nothing at all to read (an empty text and no other property) says "(no output)", a
//   form every vendor accepts.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ToolSchema } from "@pluggableharness/protocol/tool";

export const EMPTY_RESULT_TEXT = "(no output)";

export function modelTextOf(
  payload: JsonObject,
  schema:
    | (Pick<ToolSchema, "modelTextField" | "modelOmittedFields"> & { modelImageField?: string })
    | undefined,
): string {
  const images = schema?.modelImageField ?? "";
  if (images !== "" && images in payload) {
    const { [images]: _, ...rest } = payload;
    payload = rest;
  }
  const field = schema?.modelTextField ?? "";
  const value = field !== "" ? payload[field] : undefined;
  const text = typeof value === "string" ? value : undefined;
  if (text === undefined) {
    const whole = JSON.stringify(payload);
    return whole === "{}" ? EMPTY_RESULT_TEXT : whole;
  }
  const omitted = new Set(schema?.modelOmittedFields ?? []);
  const rest: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(payload)) if (k !== field && !omitted.has(k)) rest[k] = v;
  const head = Object.keys(rest).length > 0 ? JSON.stringify(rest) : "";
  const out = head && text ? `${head}\n${text}` : head || text;
  return out.trim() === "" ? EMPTY_RESULT_TEXT : out;
}

/** One image a result shows the model (the items of model_image_field). */
export interface ResultImage {
  readonly mediaType: string;
  readonly data: Uint8Array;
}

/** Media types every vision-capable vendor adapter takes inline. */
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/**
 * The images of a result payload, from its model_image_field: well-formed items only
 * (a known media type and base64 data); anything else is left out and counted.
 */
export function resultImages(
  payload: JsonObject,
  schema: { modelImageField?: string } | undefined,
): { images: ResultImage[]; malformed: number } {
  const field = schema?.modelImageField ?? "";
  const list = field !== "" ? payload[field] : undefined;
  if (!Array.isArray(list)) return { images: [], malformed: 0 };
  const images: ResultImage[] = [];
  let malformed = 0;
  for (const item of list) {
    const o = item && typeof item === "object" && !Array.isArray(item) ? (item as JsonObject) : undefined;
    const mediaType = typeof o?.["media_type"] === "string" ? o["media_type"] : "";
    const data = typeof o?.["data"] === "string" ? o["data"] : "";
    if (!IMAGE_TYPES.has(mediaType) || data === "" || !/^[A-Za-z0-9+/]+={0,2}$/.test(data)) {
      malformed++;
      continue;
    }
    images.push({ mediaType, data: new Uint8Array(Buffer.from(data, "base64")) });
  }
  return { images, malformed };
}

/**
 * The note a model without vision reads in place of a result's images: what they were,
 * and why they are not shown, so it neither guesses at them nor asks again.
 */
export function imageFallbackText(images: readonly ResultImage[], modelId: string): string {
  const what = images.map((i) => `${i.mediaType}, ${i.data.length} bytes`).join("; ");
  return `[${images.length === 1 ? "an image" : `${images.length} images`} (${what}) not shown: ${modelId || "the model in use"} does not take images]`;
}
