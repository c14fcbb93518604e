// Slash-command checks (frontend/frontend-protocol.md#slash-commands), for a plugin of any
// category that declares commands: names usable after "/", unique within the plugin, a
// dispatch chosen, direct_invoke naming one of the plugin's own operations (and nothing
// else), prompt_expansion carrying a template (and no tool), a description for the menu.
// They run after the category checks, so commands added by Configure are included.
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { MemoryService } from "@pluggableharness/protocol/memory";
import { ModelService } from "@pluggableharness/protocol/model";
import { Dispatch, type SlashCommandSpec } from "@pluggableharness/protocol/slashcommand";
import { ToolService } from "@pluggableharness/protocol/tool";
import { WidgetService } from "@pluggableharness/protocol/widget";
import type { CheckContext } from "../runner.ts";

const P = "slash";
/** What a user can type after "/" (the kernel's parser splits the name at whitespace). */
const NAME = /^[a-z0-9][a-z0-9_:-]*$/i;

/** Every category's declared commands, and the operations a direct invoke may name. */
async function declared(ctx: CheckContext): Promise<{ specs: SlashCommandSpec[]; operations: Set<string> }> {
  const specs: SlashCommandSpec[] = [];
  const operations = new Set<string>();
  const served = new Set(ctx.description.categories);
  const h = ctx.host;
  if (served.has("tool")) {
    const schema = await h.client(ToolService).getSchema({});
    specs.push(...schema.slashCommands);
    for (const t of schema.tools) operations.add(t.name);
  }
  if (served.has("model"))
    specs.push(...((await h.client(ModelService).getCapabilities({})).capabilities?.slashCommands ?? []));
  if (served.has("context"))
    specs.push(...((await h.client(ContextService).getCapabilities({})).capabilities?.slashCommands ?? []));
  if (served.has("memory"))
    specs.push(...((await h.client(MemoryService).getCapabilities({})).capabilities?.slashCommands ?? []));
  if (served.has("frontend"))
    specs.push(...((await h.client(FrontendService).getCapabilities({})).capabilities?.slashCommands ?? []));
  if (served.has("widget"))
    specs.push(...((await h.client(WidgetService).getCapabilities({})).capabilities?.slashCommands ?? []));
  return { specs, operations };
}

export async function slashCommandChecks(ctx: CheckContext): Promise<void> {
  const { specs, operations } = await declared(ctx);
  if (specs.length === 0) {
    ctx.record(`${P}.declared`, "skip", "no slash command declared");
    return;
  }
  ctx.record(`${P}.declared`, "pass", specs.map((s) => `/${s.name}`).join(", "));
  const seen = new Set<string>();
  for (const s of specs) {
    const problems: string[] = [];
    const warnings: string[] = [];
    if (!NAME.test(s.name)) problems.push(`${JSON.stringify(s.name)} cannot be typed as a command name`);
    if (seen.has(s.name)) problems.push("declared twice");
    seen.add(s.name);
    if (s.dispatch === Dispatch.DIRECT_INVOKE) {
      if (!s.toolName) problems.push("direct_invoke without a tool_name");
      else if (!operations.has(s.toolName))
        problems.push(`tool_name "${s.toolName}" is not one of this plugin's operations`);
      if (s.template !== undefined) problems.push("direct_invoke with a template");
    } else if (s.dispatch === Dispatch.PROMPT_EXPANSION) {
      if (!s.template?.trim()) problems.push("prompt_expansion without a template");
      if (s.toolName !== undefined) problems.push("prompt_expansion with a tool_name");
    } else problems.push("no dispatch (DIRECT_INVOKE or PROMPT_EXPANSION)");
    if (!s.description.trim()) warnings.push("no description for the command menu");
    ctx.record(
      `${P}.command.${s.name || "unnamed"}`,
      problems.length ? "fail" : warnings.length ? "warn" : "pass",
      problems.length
        ? problems.join("; ")
        : warnings.length
          ? warnings.join("; ")
          : s.dispatch === Dispatch.DIRECT_INVOKE
            ? `runs ${s.toolName}`
            : "expands a template",
    );
  }
}
