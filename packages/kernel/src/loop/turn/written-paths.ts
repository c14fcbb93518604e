// Which files a step's resource calls can change, for the file checkpoints around them
// (session/checkpoints.ts). A call of a tool that declares ToolSchema.written_path_fields
// changes only the files those inputs name, so the checkpoint looks at those alone; any
// other resource call (a shell command, a tool that declares nothing) may change any file,
// and so may a hook that can act on the calls (a transform or veto subscriber at a point
// the gate dispatches), so then the whole tree is scanned as before.
import type { JsonObject } from "@bufbuild/protobuf";
import { ToolKind } from "@pluggableharness/protocol/tool";
import type { HookDispatcher } from "../../hooks/dispatcher.ts";
import type { CallRecord } from "../gate/call.ts";

/** The points the gate dispatches while a step's calls run. */
const GATE_POINTS = ["pre-tool-call", "plan-ready", "post-tool-call", "post-apply"] as const;

/**
 * Adds the paths `fields` of `args` name; false when one holds no path (absent, or not a
 * string or array of strings): a declaration that does not match the call is not trusted.
 */
function named(args: JsonObject, fields: readonly string[], out: Set<string>): boolean {
  for (const f of fields) {
    const v = args[f];
    if (typeof v === "string" && v !== "") out.add(v);
    else if (Array.isArray(v) && v.every((e) => typeof e === "string" && e !== ""))
      for (const e of v) out.add(e as string);
    else return false;
  }
  return true;
}

/**
 * The files the step's resource calls can change (with `applied`: the arguments each call
 * ran with, when a human corrected them), or undefined when any file could change.
 */
export function writtenPaths(
  calls: readonly CallRecord[],
  hooks: Pick<HookDispatcher, "subscribers">,
  applied = false,
): string[] | undefined {
  for (const point of GATE_POINTS)
    if (hooks.subscribers(point).some((s) => s.mode !== "observe")) return undefined;
  const out = new Set<string>();
  for (const c of calls) {
    const schema = c.tool?.tool.schema;
    if (schema?.kind !== ToolKind.RESOURCE) continue;
    if (schema.writtenPathFields.length === 0) return undefined;
    if (!named(c.args, schema.writtenPathFields, out)) return undefined;
    if (applied && c.result?.appliedArgs && !named(c.result.appliedArgs, schema.writtenPathFields, out))
      return undefined;
  }
  return [...out];
}
