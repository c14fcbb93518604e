// How deeply a JSON value nests. Tool arguments travel as google.protobuf.Struct, where
// every object or list level costs two message levels (Value, then Struct or ListValue),
// and decoders refuse messages nested past a recursion limit (protobuf-es, upb and C++
// stop at 100 levels). Arguments nested deeper than MAX_ARGUMENT_DEPTH are refused before
// they reach the wire, with room left for the envelopes around them (a hook payload
// holding a plan holding an item holding the input is six levels deep).

/** Deepest nesting of objects and lists accepted in tool arguments and inputs (`{}` is 1). */
export const MAX_ARGUMENT_DEPTH = 32;

/**
 * The nesting depth of `value`, counting objects and lists (a scalar is 0, `{}` is 1),
 * or `limit + 1` as soon as it is known to exceed `limit`. Iterative, so a value nested
 * a million levels deep is measured without exhausting the stack.
 */
export function jsonDepth(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) {
      max = depth;
      if (max > limit) return limit + 1;
    }
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const c of children) if (c !== null && typeof c === "object") stack.push([c, depth + 1]);
  }
  return max;
}

/** Why tool arguments nest too deeply to be sent on, or undefined when they do not. */
export function argumentDepthProblem(value: unknown, limit = MAX_ARGUMENT_DEPTH): string | undefined {
  return jsonDepth(value, limit) > limit
    ? `nested more than ${limit} levels deep (objects and lists), deeper than the wire encoding carries`
    : undefined;
}
