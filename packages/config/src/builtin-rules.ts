// The built-in rule set (docs/decisions/sandbox-and-policy.md): what a shell tool may run without
// asking, and what it may never run unless the operator writes a rule for exactly that.
//
// - BUILTIN_DENY rules sit in the operator's layer: they beat every operator rule that is
//   less specific (a `{ tool_name = "bash" } allow` does not lift them), and an operator
//   overrides one only with an argument-scoped rule of equal or greater specificity.
//   Human answers (SESSION/ALWAYS) never lift a deny.
// - BUILTIN_READ_ONLY rules stand where the spec's "resource → ask" default stands: they
//   decide only when no operator rule matches the call at all, so an operator's
//   `{ tool_name = "bash" } deny` still denies `ls`.
// Matching is per simple command (`ls && rm x` is two commands), and an allow never
// covers a command that redirects output into a file or sets variables before it.

import { type CommandPattern, parseCommandPattern, patternMatchesArgv } from "./arg-match.ts";
import type { PolicyRule } from "./model.ts";
import type { ShellWord } from "./shell.ts";

/** Programs that only read: with any arguments, they change nothing. */
const READ_ONLY_COMMANDS = [
  "ls *",
  "pwd",
  "cat *",
  "head *",
  "tail *",
  "wc *",
  "grep *",
  "egrep *",
  "fgrep *",
  "rg *",
  "file *",
  "stat *",
  "du *",
  "df *",
  "tree *",
  "which *",
  "type *",
  "echo *",
  "printf *",
  "true",
  "false",
  "date *",
  "uname *",
  "whoami",
  "id *",
  "basename *",
  "dirname *",
  "realpath *",
  "diff *",
  "cmp *",
  "sort *",
  "uniq *",
  "cut *",
  "tr *",
  "nl *",
  "jq *",
  "git status *",
  "git diff *",
  "git log *",
  "git show *",
  "git branch",
  "git branch --list *",
  "git branch -a",
  "git branch -r",
  "git branch -v *",
  "git rev-parse *",
  "git ls-files *",
  "git blame *",
  "git remote -v",
];

/** Refinements of the read-only list: the arguments that make a reader run or write something. */
const NOT_READ_ONLY = [
  "rg * --pre *",
  "rg * --pre=*",
  "sort * -o *",
  "sort * -o* *",
  "sort * --output=*",
  "tree * -o *",
  "git diff * --output=*",
  "git diff * --ext-diff *",
  "git log * --output=*",
  "git show * --output=*",
  "git show * --ext-diff *",
  "date * -s *",
  "date * --set=*",
];

/** Commands that destroy what cannot be recovered, or leave the sandbox's reach. */
const CRITICAL_COMMANDS = [
  "rm * /",
  "rm * '/*'",
  "rm * ~",
  "rm * '~/'",
  "rm * '~/*'",
  "rm * /.",
  "rm * /..",
  "git push * --force *",
  "git push * --force-with-lease *",
  "git push * --force-with-lease=*",
  "git push * -f *",
  "git push * +*",
  "sudo *",
  "doas *",
  "su *",
  "pkexec *",
  "mkfs *",
  "mkfs.* *",
  "dd * of=/dev/*",
  "chmod * -R * /",
  "chown * -R * /",
  "shutdown *",
  "reboot *",
  "poweroff *",
  "halt *",
];

/** Programs that run whatever arrives on their standard input. */
export const STDIN_INTERPRETERS = new Set([
  "sh",
  "bash",
  "dash",
  "zsh",
  "ksh",
  "fish",
  "python",
  "python3",
  "perl",
  "ruby",
  "node",
]);
/** Programs that fetch from the network. */
export const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c"]);

export const BUILTIN_READ_ONLY_RULE = "builtin:read_only_commands";
export const BUILTIN_NOT_READ_ONLY_RULE = "builtin:commands_that_write";
export const BUILTIN_CRITICAL_RULE = "builtin:critical_commands";
/** Not a pattern: a downloader piped into an interpreter (`curl … | sh`), decided in the engine. */
export const BUILTIN_PIPE_TO_SHELL_RULE = "builtin:download_piped_to_shell";

export function builtinDenyRules(): PolicyRule[] {
  return [
    {
      name: BUILTIN_CRITICAL_RULE,
      match: { tool_name: "bash", command: [...CRITICAL_COMMANDS] },
      action: "deny",
      origin: "builtin",
      order: 0,
    },
  ];
}

export function builtinDefaultRules(): PolicyRule[] {
  return [
    {
      name: BUILTIN_READ_ONLY_RULE,
      match: { tool_name: "bash", command: [...READ_ONLY_COMMANDS] },
      action: "allow",
      origin: "builtin",
      order: 0,
    },
    {
      name: BUILTIN_NOT_READ_ONLY_RULE,
      match: { tool_name: "bash", command: [...NOT_READ_ONLY] },
      action: "ask",
      origin: "builtin",
      order: 1,
    },
  ];
}

let readOnlyPatterns: { allow: CommandPattern[]; not: CommandPattern[] } | undefined;

/** Whether argv is one of the built-in read-only commands (and none of their writing forms). */
export function isReadOnlyCommand(argv: readonly ShellWord[]): boolean {
  readOnlyPatterns ??= {
    allow: READ_ONLY_COMMANDS.map(parseCommandPattern),
    not: NOT_READ_ONLY.map(parseCommandPattern),
  };
  return (
    readOnlyPatterns.allow.some((p) => patternMatchesArgv(p, argv)) &&
    !readOnlyPatterns.not.some((p) => patternMatchesArgv(p, argv))
  );
}
