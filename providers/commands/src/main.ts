// The commands provider's executable.
import { join } from "node:path";
import { configWarning, serveTools } from "@pluggableharness/tool-kit";
import { memoryTool } from "./memory.ts";
import { rewindTool } from "./rewind.ts";
import { TOOLS } from "./tools.ts";
import { loadUserCommands, type UserCommand } from "./user-commands.ts";

const BUILTIN: { name: string; description: string }[] = [
  { name: "model", description: "Show the models, or switch the next turn's: /model provider/model" },
  { name: "plan", description: "Toggle plan mode (only tools that change nothing): /plan [on|off]" },
  { name: "compact", description: "Compact the conversation now: /compact [what to keep]" },
  { name: "permissions", description: "List remembered approvals; /permissions revoke <#> drops one" },
  { name: "cost", description: "What the session cost so far, per model, and context use" },
  { name: "sessions", description: "Sessions started in this directory (/sessions all=true: every one)" },
  { name: "rewind", description: "Go back to before a prompt, files too: /rewind [n [confirm]]" },
  {
    name: "memory",
    description: "Audit memory: /memory [pending], show <id>, approve <id>, reject <id>, forget <id>",
  },
];

let user: UserCommand[] = [];
let dirs: string[] = [];

await serveTools(new URL("../package.json", import.meta.url), {
  tools: [...TOOLS, rewindTool, memoryTool],
  config: [
    {
      name: "directories",
      type: "list_string",
      path: true,
      description:
        "Directories of user commands (one markdown file per command). Default: .agent/commands in the project.",
    },
  ],
  operationsFromConfig: true,
  // User commands come from the files in these directories: the kernel keeps the answer
  // while they are unchanged.
  operationsCacheable: true,
  operationSources: () => dirs,
  configure(values) {
    const given = values["directories"];
    dirs =
      Array.isArray(given) && given.length > 0
        ? (given as string[])
        : [join(process.cwd(), ".agent", "commands")];
    const loaded = loadUserCommands(dirs);
    const taken = new Set(BUILTIN.map((b) => b.name));
    const warnings = loaded.problems.map((p) =>
      configWarning(["directories"], `${p.file} is not a command`, p.message),
    );
    user = loaded.commands.filter((c) => {
      if (!taken.has(c.name)) return true;
      warnings.push(
        configWarning(["directories"], `${c.file} is not a command`, `/${c.name} is a built-in command`),
      );
      return false;
    });
    return warnings;
  },
  slashCommands: () => [
    ...BUILTIN.map((b) => ({ name: b.name, description: b.description, toolName: b.name })),
    ...user.map((c) => ({ name: c.name, description: c.description, template: c.template })),
  ],
});
