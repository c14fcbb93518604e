// `agent completion bash|zsh|fish`: a shell completion script written from the command
// tree itself, so every command, subcommand, option and option choice the CLI has is
// completed and a new one needs no edit here. Install: `agent completion bash >
// ~/.local/share/bash-completion/completions/agent` (or source it from the shell's rc).
import type { Command, Option } from "commander";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io } from "../io.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

interface Spec {
  /** "" for the top level, "sessions" or "sessions list" below it. */
  readonly path: string;
  readonly subcommands: { name: string; description: string }[];
  readonly options: { flags: string[]; description: string; takesValue: boolean; choices: string[] }[];
}

function optionsOf(cmd: Command): Spec["options"] {
  const opts = (cmd.options as readonly Option[]).filter((o) => !o.hidden);
  const all = [...opts.map((o) => o)];
  const out = all.map((o) => ({
    flags: [o.short, o.long].filter((f): f is string => !!f),
    description: o.description,
    takesValue: o.required || o.optional,
    choices: [...(o.argChoices ?? [])],
  }));
  out.push({ flags: ["-h", "--help"], description: "show help", takesValue: false, choices: [] });
  return out;
}

function specs(program: Command): Spec[] {
  const out: Spec[] = [];
  const walk = (cmd: Command, path: string) => {
    const subs = (cmd.commands as readonly Command[]).filter((c) => c.name() !== "help");
    out.push({
      path,
      subcommands: subs.map((c) => ({ name: c.name(), description: c.description() })),
      options: optionsOf(cmd),
    });
    for (const c of subs) walk(c, path ? `${path} ${c.name()}` : c.name());
  };
  walk(program, "");
  return out;
}

const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

function bash(all: Spec[]): string {
  const cases = all
    .map((s) => {
      const words = [...s.subcommands.map((c) => c.name), ...s.options.flatMap((o) => o.flags)];
      const choices = s.options
        .filter((o) => o.choices.length > 0)
        .map(
          (o) =>
            `        ${o.flags.join("|")}) COMPREPLY=($(compgen -W ${q(o.choices.join(" "))} -- "$cur")); return ;;`,
        )
        .join("\n");
      return `    ${q(s.path)})
      case "$prev" in
${choices}
      esac
      COMPREPLY=($(compgen -W ${q(words.join(" "))} -- "$cur")) ;;`;
    })
    .join("\n");
  return `# bash completion for agent (agent completion bash)
_agent() {
  local cur prev path="" w i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # The command path so far: the words that name (sub)commands.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in -*) continue ;; esac
    case " $(_agent_subcommands "$path") " in *" $w "*) path="\${path:+$path }$w" ;; esac
  done
  case "$path" in
${cases}
  esac
}
_agent_subcommands() {
  case "$1" in
${all.map((s) => `    ${q(s.path)}) echo ${q(s.subcommands.map((c) => c.name).join(" "))} ;;`).join("\n")}
  esac
}
complete -o default -F _agent agent
`;
}

function zsh(all: Spec[]): string {
  const fn = (path: string) => `_agent${path ? `_${path.replace(/[^a-z0-9]+/gi, "_")}` : ""}`;
  const esc = (s: string) => s.replace(/[[\]:\\]/g, "\\$&");
  const body = all
    .map((s) => {
      const opts = s.options.map((o) => {
        const value = o.takesValue
          ? o.choices.length > 0
            ? `:value:(${o.choices.join(" ")})`
            : ":value:"
          : "";
        const names = o.flags.length > 1 ? `{${o.flags.join(",")}}` : o.flags[0]!;
        return `    ${o.flags.length > 1 ? `'(${o.flags.join(" ")})'` : ""}${names}${q(`[${esc(o.description)}]${value}`)}`;
      });
      if (s.subcommands.length === 0) {
        return `${fn(s.path)}() {
  _arguments -s \\
${[...opts, "    '*:file:_files'"].join(" \\\n")}
}`;
      }
      const subs = s.subcommands.map((c) => `      ${q(`${c.name}:${esc(c.description)}`)}`).join("\n");
      return `${fn(s.path)}() {
  local -a subcommands
  subcommands=(
${subs}
  )
  _arguments -C \\
${[...opts, "    '1:command:->cmd'", "    '*::arg:->args'"].join(" \\\n")}
  case $state in
    cmd) _describe 'command' subcommands ;;
    args)
      case $words[1] in
${s.subcommands.map((c) => `        ${c.name}) ${fn(s.path ? `${s.path} ${c.name}` : c.name)} ;;`).join("\n")}
      esac ;;
  esac
}`;
    })
    .join("\n\n");
  return `#compdef agent
# zsh completion for agent (agent completion zsh)
${body}

compdef _agent agent
`;
}

function fish(all: Spec[]): string {
  const lines = ["# fish completion for agent (agent completion fish)", "complete -c agent -f"];
  const cond = (path: string, subs: string[]) => {
    if (path === "") return "__fish_use_subcommand";
    const parts = path.split(" ");
    const seen = parts.map((p) => `__fish_seen_subcommand_from ${p}`).join("; and ");
    return subs.length > 0 ? `${seen}; and not __fish_seen_subcommand_from ${subs.join(" ")}` : seen;
  };
  for (const s of all) {
    const subNames = s.subcommands.map((c) => c.name);
    const here = cond(s.path, subNames);
    for (const c of s.subcommands) {
      lines.push(`complete -c agent -n ${q(here)} -a ${c.name} -d ${q(c.description)}`);
    }
    const optCond = s.path === "" ? "__fish_use_subcommand" : cond(s.path, []);
    for (const o of s.options) {
      const flags = o.flags
        .map((f) => (f.startsWith("--") ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`))
        .join(" ");
      const value = o.takesValue ? (o.choices.length > 0 ? ` -x -a ${q(o.choices.join(" "))}` : " -r") : "";
      lines.push(`complete -c agent -n ${q(optCond)} ${flags}${value} -d ${q(o.description)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

export function completionScript(program: Command, shell: string): string {
  if (!(SHELLS as readonly string[]).includes(shell)) {
    throw new CliError(`agent completion: "${shell}" is not one of ${SHELLS.join(", ")}`, EXIT.USAGE);
  }
  const all = specs(program);
  return { bash, zsh, fish }[shell as Shell](all);
}

export function runCompletion(io: Io, program: Command, shell: string): number {
  io.out.write(completionScript(program, shell));
  return EXIT.OK;
}
