// Finds the CallContext a request carries (ToolCall.call_context inside InvokeRequest,
// StreamCompletionRequest.call_context, ...) so kernel callbacks made while serving the
// request can be attributed to its session without the plugin passing it along.
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import type { CallContext } from "@pluggableharness/protocol/common";

const CALL_CONTEXT_TYPE = "pluggableharness.common.v1.CallContext";
const MAX_DEPTH = 3;
const paths = new WeakMap<DescMessage, readonly string[] | null>();

function singularMessage(field: DescField): DescMessage | undefined {
  return field.fieldKind === "message" ? field.message : undefined;
}

/** Field localName path from `desc` to its shallowest CallContext, if any. */
export function callContextPath(desc: DescMessage): readonly string[] | undefined {
  const cached = paths.get(desc);
  if (cached !== undefined) return cached ?? undefined;
  let found: readonly string[] | null = null;
  let frontier: Array<{ msg: DescMessage; path: string[] }> = [{ msg: desc, path: [] }];
  for (let depth = 0; depth < MAX_DEPTH && !found && frontier.length > 0; depth++) {
    const next: typeof frontier = [];
    for (const { msg, path } of frontier) {
      for (const field of msg.fields) {
        const sub = singularMessage(field);
        if (!sub) continue;
        if (sub.typeName === CALL_CONTEXT_TYPE) {
          found = [...path, field.localName];
          break;
        }
        next.push({ msg: sub, path: [...path, field.localName] });
      }
      if (found) break;
    }
    frontier = next;
  }
  paths.set(desc, found);
  return found ?? undefined;
}

export function extractCallContext(desc: DescMessage, request: unknown): CallContext | undefined {
  const path = callContextPath(desc);
  if (!path) return undefined;
  let value: unknown = request;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value === undefined || value === null ? undefined : (value as CallContext);
}
