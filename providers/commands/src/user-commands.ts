// User-defined slash commands: one markdown file per command in .agent/commands/
// (`review.md` is `/review`), as Claude Code reads .claude/commands/. An optional
// frontmatter block (between `---` lines, `key: value` scalars) gives `description` and
// `arguments` (`argument-hint` is read too); the body is the prompt. `$ARGUMENTS` is the
// whole argument text and `$1`…`$9` its words; they become the spec's `{args}` and
// `{1}`… placeholders, which the kernel fills when it expands the command.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";

export interface UserCommand {
  readonly name: string;
  readonly description: string;
  readonly template: string;
  readonly file: string;
}

export interface LoadedCommands {
  readonly commands: UserCommand[];
  /** Files that could not be used, with why (reported as configuration warnings). */
  readonly problems: { file: string; message: string }[];
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_:-]*$/;
/** Bigger files are refused: a prompt template is not a document store. */
export const MAX_COMMAND_BYTES = 64 * 1024;

/** Frontmatter `key: value` pairs and the body after it. */
export function parseFrontmatter(text: string): { fields: Record<string, string>; body: string } {
  const normalized = text.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  if (!normalized.startsWith("---\n")) return { fields: {}, body: normalized };
  const end = normalized.indexOf("\n---", 4);
  if (end < 0) return { fields: {}, body: normalized };
  const fields: Record<string, string> = {};
  for (const line of normalized.slice(4, end).split("\n")) {
    const m = /^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2]!.trim();
    if ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'"))) {
      value = value.slice(1, -1);
    }
    fields[m[1]!.toLowerCase()] = value;
  }
  const after = normalized.slice(end + 4);
  return { fields, body: after.startsWith("\n") ? after.slice(1) : after };
}

/** `$ARGUMENTS` and `$1`…`$9` as the spec's template placeholders; literal braces kept. */
export function toTemplate(body: string): string {
  return body.replace(/\$ARGUMENTS\b/g, "{args}").replace(/\$([1-9])(?![0-9])/g, "{$1}");
}

export function loadUserCommands(dirs: readonly string[]): LoadedCommands {
  const commands: UserCommand[] = [];
  const problems: { file: string; message: string }[] = [];
  const seen = new Map<string, string>();
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir)
        .filter((n) => n.endsWith(".md"))
        .sort();
    } catch {
      continue; // no such directory: no commands from it
    }
    for (const n of names) {
      const file = join(dir, n);
      const name = basename(n, ".md");
      if (!NAME.test(name)) {
        problems.push({ file, message: `"${name}" is not a command name (letters, digits, _ : -)` });
        continue;
      }
      try {
        const size = statSync(file).size;
        if (size > MAX_COMMAND_BYTES) {
          problems.push({ file, message: `${size} bytes is over the ${MAX_COMMAND_BYTES}-byte limit` });
          continue;
        }
        const { fields, body } = parseFrontmatter(readFileSync(file, "utf8"));
        if (body.trim() === "") {
          problems.push({ file, message: "the command has no prompt text" });
          continue;
        }
        const earlier = seen.get(name);
        if (earlier) {
          problems.push({ file, message: `/${name} is already defined by ${earlier}` });
          continue;
        }
        seen.set(name, file);
        const hint = fields["arguments"] ?? fields["argument-hint"] ?? "";
        const firstLine = body.trim().split("\n")[0]!.slice(0, 80);
        const description = `${fields["description"] || firstLine}${hint ? ` (${hint})` : ""}`;
        let template = toTemplate(body.trimEnd());
        // Arguments declared but never placed: they follow the prompt, as Claude Code does.
        if (hint && !/\{(args|arg|[1-9])\}/.test(template)) template += "\n\nArguments: {args}";
        commands.push({ name, description, template, file });
      } catch (err) {
        problems.push({ file, message: (err as Error).message });
      }
    }
  }
  return { commands, problems };
}
