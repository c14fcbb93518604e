// Slash commands as the terminal UI sees them: the session's registry (what the
// kernel aggregated from the loaded providers: /model, /plan, /permissions… from the
// commands provider, user commands from .agent/commands) plus the few the UI answers
// itself because they act on the UI's own connection rather than on the session:
// /help (lists the registry), /clear (a fresh session here), /resume (switch to another
// session), /exit. See docs/decisions/cli-and-tui.md, "Slash commands and widgets".
import { type PlacedContent, TextStyle } from "@pluggableharness/protocol/render";
import type { SlashCommandRegistry } from "@pluggableharness/protocol/slashcommand";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";

export interface CommandEntry {
  readonly name: string;
  readonly description: string;
  /** The provider that declared it; "" for the UI's own. */
  readonly provider: string;
  /** Expands into a user message (costs a model turn) rather than running a tool. */
  readonly expands: boolean;
  /** The tool a direct-invoke command runs. */
  readonly toolName?: string;
}

/** What the UI answers itself. A registered command of the same name wins, except exit/quit. */
export const LOCAL_COMMANDS: readonly CommandEntry[] = [
  { name: "help", description: "Keys and commands", provider: "", expands: false },
  { name: "clear", description: "Start a fresh session in this directory", provider: "", expands: false },
  {
    name: "resume",
    description: "Switch to another session: /resume [id or prefix]",
    provider: "",
    expands: false,
  },
  { name: "exit", description: "Leave (the session stays resumable)", provider: "", expands: false },
  { name: "quit", description: "Same as /exit", provider: "", expands: false },
];

/** The fallback /cost when no provider registers one: the UI's own running totals. */
export const LOCAL_COST: CommandEntry = {
  name: "cost",
  description: "Spend so far (from the usage the UI saw)",
  provider: "",
  expands: false,
};

export function registryEntries(registry: SlashCommandRegistry | undefined): CommandEntry[] {
  return (registry?.commands ?? []).flatMap((c) =>
    c.spec?.name
      ? [
          {
            name: c.spec.name,
            description: c.spec.description,
            provider: c.provider,
            expands: c.spec.dispatch === Dispatch.PROMPT_EXPANSION,
            ...(c.spec.toolName ? { toolName: c.spec.toolName } : {}),
          },
        ]
      : [],
  );
}

/** Every command the operator can type now, registered ones first where names meet. */
export function allCommands(registered: readonly CommandEntry[]): CommandEntry[] {
  const names = new Set(registered.map((c) => c.name));
  const local = LOCAL_COMMANDS.filter((c) => !names.has(c.name) || c.name === "exit" || c.name === "quit");
  const cost = names.has("cost") ? [] : [LOCAL_COST];
  return [...local, ...cost, ...registered.filter((c) => c.name !== "exit" && c.name !== "quit")];
}

/** `/name rest` split; undefined for text that is not a command (`//x` sends "/x"). */
export function parseCommand(text: string): { name: string; args: string } | undefined {
  if (!text.startsWith("/") || text.startsWith("//")) return undefined;
  const m = /^\/(\S*)\s*([\s\S]*)$/.exec(text);
  return m ? { name: m[1]!, args: m[2]!.trim() } : undefined;
}

/** Completions of a partial `/na` at the start of the input: the command names it begins. */
export function completeCommand(prefix: string, commands: readonly CommandEntry[]): string[] {
  return [...new Set(commands.map((c) => c.name))].filter((n) => n.startsWith(prefix)).sort();
}

/**
 * The kernel's echo of an operator command, which the UI leaves out: the call's
 * arguments ("→ commands.plan" and its JSON) and the history note telling the model what
 * the operator ran. The command's own rendered result is what the operator reads.
 */
export function isCommandEcho(content: PlacedContent, commands: readonly CommandEntry[]): boolean {
  const root = content.content?.root?.node;
  // A tool call is one bold line "→ provider.tool <arguments>", folded when the line
  // cannot show all of them; a message is a group headed by who speaks.
  const head = root?.case === "group" ? root.value.children[0]?.node : root;
  const label =
    head?.case === "text" && head.value.style === TextStyle.BOLD
      ? head.value.content
      : head?.case === "collapsible"
        ? head.value.summary
        : undefined;
  if (label === undefined) return false;
  if (label === "User (kernel: direct_invoke)") return true;
  if (!label.startsWith("→ ")) return false;
  const tool = label.slice(2).split(" ")[0];
  return commands.some((c) => c.toolName !== undefined && `${c.provider}.${c.toolName}` === tool);
}
