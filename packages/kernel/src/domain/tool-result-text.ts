// What the model reads for a tool's result payload (docs/decisions.md, "Tool results as
// text"). The persisted payload stays the exact JSON the tool returned; this is only the
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
  schema: Pick<ToolSchema, "modelTextField" | "modelOmittedFields"> | undefined,
): string {
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
