// Maps runtime failures onto the categories' error vocabularies. PROCESS_CRASHED is
// synthesized here, by the kernel's side, never reported by a plugin about itself.
import { create } from "@bufbuild/protobuf";
import { type ModelError, ModelErrorCategory, ModelErrorSchema } from "@pluggableharness/protocol/model";
import { type ToolError, ToolErrorCategory, ToolErrorSchema } from "@pluggableharness/protocol/tool";
import { PluginCrashedError, PluginLaunchError } from "./errors.ts";

function crashMessage(err: PluginCrashedError | PluginLaunchError): string {
  return err.message.split("\n")[0]!;
}

/** ToolError PROCESS_CRASHED for a crash or failed launch; undefined for other errors. */
export function toolErrorFor(err: unknown): ToolError | undefined {
  if (!(err instanceof PluginCrashedError || err instanceof PluginLaunchError)) return undefined;
  return create(ToolErrorSchema, {
    category: ToolErrorCategory.PROCESS_CRASHED,
    message: crashMessage(err),
    // The plugin is relaunched on the next call, so trying again can succeed.
    retryable: true,
  });
}

/** ModelError PROCESS_CRASHED for a crash or failed launch; undefined for other errors. */
export function modelErrorFor(err: unknown): ModelError | undefined {
  if (!(err instanceof PluginCrashedError || err instanceof PluginLaunchError)) return undefined;
  return create(ModelErrorSchema, {
    category: ModelErrorCategory.PROCESS_CRASHED,
    message: crashMessage(err),
    retryable: true,
  });
}
