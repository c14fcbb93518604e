// A conservative reader of POSIX/bash command lines, for policy only: it splits a
// command into the simple commands it runs (across `&&`, `||`, `;`, `|`, `&`, newlines,
// subshells, groups, command and process substitutions, and `sh -c` style wrappers) so
// a rule can judge each of them. It never runs or expands anything. Whatever it cannot
// read with confidence (a heredoc feeding substitutions, unbalanced quotes, `eval`-like
// constructs) makes the whole command `opaque`, which no argument-scoped rule matches.

/** One word of a simple command, quotes removed. */
export interface ShellWord {
  readonly text: string;
  /** Contains a parameter, command or arithmetic expansion: its value is unknown. */
  readonly dynamic: boolean;
}

export interface SimpleCommand {
  /** argv after leading assignments and redirections are taken out. */
  readonly argv: readonly ShellWord[];
  /** `NAME=value` words before the command (they can change what it runs). */
  readonly assignments: number;
  /** Output redirections to something other than /dev/null or a file descriptor. */
  readonly writes: readonly ShellWord[];
  /** Found inside another command (substitution, `sh -c`, `env …`), not at the top. */
  readonly nested: boolean;
  /** The program of the pipeline stage feeding this one's stdin (`curl` in `curl … | sh`). */
  readonly pipedFrom?: string;
  /** The wrapper this command was taken out of (`env X=1 npm test` for `npm test`). */
  readonly via?: SimpleCommand;
}

export interface ParsedCommand {
  readonly commands: readonly SimpleCommand[];
  /** The reader could not account for everything the line might run. */
  readonly opaque: boolean;
  readonly reason?: string;
}

class Opaque extends Error {}

const OPERATORS = ["&&", "||", ";;", "|&", ";", "|", "&", "\n"];
const WRAPPERS = new Set(["env", "nice", "nohup", "time", "command", "builtin", "exec", "timeout", "stdbuf"]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh"]);
/** Words that end argv parsing of a reserved construct; they are not commands. */
const RESERVED = new Set([
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "for",
  "case",
  "esac",
  "in",
  "select",
  "function",
  "!",
  "{",
  "}",
  "[[",
  "]]",
]);

interface Token {
  kind: "word" | "op" | "redir";
  text: string;
  word?: ShellWord;
  /** For redirections: the operator, e.g. ">", ">>", "2>", "&>". */
  op?: string;
}

/** Splits a command line into the simple commands it would run. */
export function parseCommand(line: string, depth = 0): ParsedCommand {
  try {
    const commands: SimpleCommand[] = [];
    read(line, depth, false, commands);
    return { commands, opaque: false };
  } catch (e) {
    if (e instanceof Opaque) return { commands: [], opaque: true, reason: e.message };
    throw e;
  }
}

function read(line: string, depth: number, nested: boolean, out: SimpleCommand[]): void {
  if (depth > 8) throw new Opaque("nested too deeply");
  const tokens = tokenize(line, depth, out);
  let current: Token[] = [];
  let pipedFrom: string | undefined;
  const flush = (op: string | undefined) => {
    const before = out.length;
    if (current.length > 0) simple(current, depth, nested, out, pipedFrom);
    const made = out[before];
    pipedFrom =
      (op === "|" || op === "|&") && made && made.argv[0] && !made.argv[0].dynamic
        ? basename(made.argv[0].text)
        : undefined;
    current = [];
  };
  for (const t of tokens) {
    if (t.kind === "op") flush(t.text);
    else current.push(t);
  }
  flush(undefined);
}

function simple(
  tokens: Token[],
  depth: number,
  nested: boolean,
  out: SimpleCommand[],
  pipedFrom: string | undefined,
): void {
  const argv: ShellWord[] = [];
  const writes: ShellWord[] = [];
  let assignments = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === "redir") {
      const target = tokens[i + 1];
      if (target?.kind !== "word") throw new Opaque("a redirection without a target");
      i++;
      const op = t.op!;
      if (op.includes("<") && !op.includes(">")) continue; // input
      if (op.endsWith("&") && /^(\d+|-)$/.test(target.word!.text)) continue; // 2>&1, >&-
      if (!target.word!.dynamic && ["/dev/null", "/dev/stdout", "/dev/stderr"].includes(target.word!.text)) {
        continue;
      }
      writes.push(target.word!);
      continue;
    }
    const w = t.word!;
    if (argv.length === 0 && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(w.text)) {
      assignments++;
      continue;
    }
    argv.push(w);
  }
  // Reserved words (if/then/while/...) are control flow: what follows them is a command.
  while (argv.length > 0 && !argv[0]!.dynamic && RESERVED.has(argv[0]!.text)) argv.shift();
  if (argv.length === 0 && writes.length === 0) return;
  const cmd: SimpleCommand = { argv, assignments, writes, nested, ...(pipedFrom ? { pipedFrom } : {}) };
  out.push(cmd);
  unwrap(cmd, depth, out);
}

/** Options of wrappers that take a value as the next word. */
const OPTION_VALUES: Record<string, readonly string[]> = {
  nice: ["-n", "--adjustment"],
  timeout: ["-s", "--signal", "-k", "--kill-after"],
  env: ["-u", "--unset", "-C", "--chdir"],
  sudo: ["-u", "--user", "-g", "--group", "-C", "-h", "--host", "-p", "--prompt", "-U", "-r", "-t", "-D"],
  doas: ["-u", "-C"],
  xargs: [
    "-I",
    "-n",
    "-P",
    "-L",
    "-d",
    "-E",
    "-s",
    "-a",
    "--max-args",
    "--max-procs",
    "--delimiter",
    "--arg-file",
  ],
  stdbuf: ["-i", "-o", "-e"],
  time: ["-f", "-o", "--format", "--output"],
};

/** `env X=1 cmd`, `nice cmd`, `sh -c "cmd"`, `xargs cmd`: the inner command is judged too. */
function unwrap(outer: SimpleCommand, depth: number, out: SimpleCommand[]): void {
  const argv = outer.argv;
  if (argv.length < 2 || argv[0]!.dynamic) return;
  const name = basename(argv[0]!.text);
  if (SHELLS.has(name)) {
    const c = argv.findIndex((w, i) => i > 0 && !w.dynamic && /^-[a-z]*c[a-z]*$/.test(w.text));
    if (c > 0 && argv[c + 1]) {
      if (argv[c + 1]!.dynamic) throw new Opaque(`${name} -c with a computed script`);
      const before = out.length;
      read(argv[c + 1]!.text, depth + 1, true, out);
      for (let k = before; k < out.length; k++) {
        if (out[k]!.via === undefined) out[k] = { ...out[k]!, via: outer };
      }
    }
    return;
  }
  if (name === "eval" || name === "source" || name === ".") throw new Opaque(`${name} runs computed text`);
  if (WRAPPERS.has(name) || name === "xargs" || name === "sudo" || name === "doas") {
    if (name === "env" && argv.some((w) => /^(-S|--split-string)/.test(w.text))) {
      throw new Opaque("env -S splits a computed command line");
    }
    const valued = OPTION_VALUES[name] ?? [];
    let i = 1;
    while (i < argv.length) {
      const w = argv[i]!;
      if (w.dynamic) return;
      if (w.text === "--") {
        i++;
        break;
      }
      if (w.text.startsWith("-")) {
        i += valued.includes(w.text) ? 2 : 1;
        continue;
      }
      if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w.text)) {
        i++;
        continue;
      }
      if (name === "timeout" && /^\d/.test(w.text)) {
        i++;
        continue;
      }
      break;
    }
    const rest = argv.slice(i);
    if (rest.length === 0) return;
    const inner: SimpleCommand = { argv: rest, assignments: 0, writes: [], nested: true, via: outer };
    out.push(inner);
    unwrap(inner, depth + 1, out);
  }
}

export function basename(p: string): string {
  const i = p.lastIndexOf("/");
  return i < 0 ? p : p.slice(i + 1);
}

function tokenize(line: string, depth: number, out: SimpleCommand[]): Token[] {
  const tokens: Token[] = [];
  const pendingHeredocs: Array<{ delim: string; quoted: boolean; strip: boolean }> = [];
  let i = 0;
  const n = line.length;
  let text = "";
  let dynamic = false;
  let inWord = false;
  const endWord = () => {
    if (!inWord) return;
    tokens.push({ kind: "word", text, word: { text, dynamic } });
    text = "";
    dynamic = false;
    inWord = false;
  };
  const substitution = (body: string) => read(body, depth + 1, true, out);
  while (i < n) {
    const c = line[i]!;
    if (c === "\\") {
      if (line[i + 1] === "\n") {
        i += 2;
        continue;
      }
      if (i + 1 >= n) throw new Opaque("a trailing backslash");
      text += line[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const k = line.indexOf("'", i + 1);
      if (k < 0) throw new Opaque("unbalanced quote");
      text += line.slice(i + 1, k);
      inWord = true;
      i = k + 1;
      continue;
    }
    if (c === "$" && line[i + 1] === "'") {
      // ANSI-C quoting: escapes are decoded by bash; treat the value as unknown.
      const k = line.indexOf("'", i + 2);
      if (k < 0) throw new Opaque("unbalanced quote");
      text += line.slice(i + 2, k);
      dynamic = true;
      inWord = true;
      i = k + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < n && line[j] !== '"') {
        const d = line[j]!;
        if (d === "\\" && j + 1 < n) {
          text += /[$`"\\\n]/.test(line[j + 1]!) ? line[j + 1] : `\\${line[j + 1]}`;
          j += 2;
        } else if (d === "$" || d === "`") {
          j = expansion(line, j, substitution);
          dynamic = true;
        } else {
          text += d;
          j++;
        }
      }
      if (j >= n) throw new Opaque("unbalanced quote");
      inWord = true;
      i = j + 1;
      continue;
    }
    if (c === "$" || c === "`") {
      if (c === "$" && i + 1 < n && !/[A-Za-z0-9_{(@*#?$!-]/.test(line[i + 1]!)) {
        text += c;
        inWord = true;
        i++;
        continue;
      }
      i = expansion(line, i, substitution);
      dynamic = true;
      inWord = true;
      continue;
    }
    if ((c === "<" || c === ">") && line[i + 1] === "(") {
      const end = closingParen(line, i + 2);
      substitution(line.slice(i + 2, end));
      text += "/dev/fd/63";
      dynamic = true;
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === "#" && !inWord) {
      const k = line.indexOf("\n", i);
      i = k < 0 ? n : k;
      continue;
    }
    if (c === " " || c === "\t") {
      endWord();
      i++;
      continue;
    }
    if (c === "(" || c === ")" || c === "{" || c === "}") {
      // Subshells and groups only sequence commands; `{`/`}` are words unless alone.
      if ((c === "{" || c === "}") && (inWord || !/[\s;&|]/.test(line[i + 1] ?? " "))) {
        text += c;
        inWord = true;
        i++;
        continue;
      }
      endWord();
      tokens.push({ kind: "op", text: c });
      i++;
      continue;
    }
    // Redirections: [n]>, [n]>>, >|, &>, &>>, <, <>, <<<, <<, <<-, [n]>&m, [n]<&m
    const redir = /^(\d*|&)(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)/.exec(line.slice(i));
    if (redir && (redir[1] === "" || redir[1] === "&" || !inWord || /^\d+$/.test(text))) {
      if (redir[1] !== "" && redir[1] !== "&" && inWord) {
        text = "";
        inWord = false;
      } else endWord();
      const op = redir[0];
      i += op.length;
      if (op.endsWith("<<") || op.endsWith("<<-")) {
        while (line[i] === " " || line[i] === "\t") i++;
        const m = /^(['"]?)([^\s;&|<>()'"]+)\1/.exec(line.slice(i));
        if (!m) throw new Opaque("a heredoc without a delimiter");
        pendingHeredocs.push({ delim: m[2]!, quoted: m[1] !== "", strip: op.endsWith("-") });
        i += m[0].length;
        continue;
      }
      tokens.push({ kind: "redir", text: op, op: op === "<<<" ? "<" : op });
      continue;
    }
    if (c === "\n" && pendingHeredocs.length > 0) {
      endWord();
      tokens.push({ kind: "op", text: "\n" });
      i++;
      for (const h of pendingHeredocs.splice(0)) {
        const bodyStart = i;
        for (;;) {
          if (i >= n) throw new Opaque("an unterminated heredoc");
          const k = line.indexOf("\n", i);
          const row = line.slice(i, k < 0 ? n : k);
          i = k < 0 ? n : k + 1;
          if ((h.strip ? row.replace(/^\t+/, "") : row) === h.delim) break;
        }
        const body = line.slice(bodyStart, i);
        if (!h.quoted && /\$\(|`/.test(body)) throw new Opaque("a heredoc with command substitutions");
      }
      continue;
    }
    const op = OPERATORS.find((o) => line.startsWith(o, i));
    if (op) {
      endWord();
      tokens.push({ kind: "op", text: op });
      i += op.length;
      continue;
    }
    text += c;
    inWord = true;
    i++;
  }
  endWord();
  if (pendingHeredocs.length > 0) throw new Opaque("an unterminated heredoc");
  return tokens;
}

function skipDouble(line: string, j: number): number {
  while (j < line.length && line[j] !== '"') j += line[j] === "\\" ? 2 : 1;
  if (j >= line.length) throw new Opaque("unbalanced quote");
  return j + 1;
}

/**
 * The index of the parenthesis closing a `$(...)`, `<(...)` or `((...))` body that starts
 * at `start`, just after the opening one; quotes and escapes inside are skipped.
 */
function closingParen(line: string, start: number): number {
  const n = line.length;
  let level = 1;
  let j = start;
  while (j < n) {
    const c = line[j]!;
    if (c === "\\") j += 2;
    else if (c === "'") {
      const k = line.indexOf("'", j + 1);
      if (k < 0) throw new Opaque("unbalanced quote");
      j = k + 1;
    } else if (c === '"') {
      j = skipDouble(line, j + 1);
    } else if (c === "(") {
      level++;
      j++;
    } else if (c === ")") {
      level--;
      if (level === 0) return j;
      j++;
    } else j++;
  }
  throw new Opaque("unbalanced parenthesis");
}

/** Skips one `$…` or backtick expansion at `i`, reading command substitutions; returns the index after it. */
function expansion(line: string, i: number, substitution: (body: string) => void): number {
  const n = line.length;
  if (line[i] === "`") {
    const k = line.indexOf("`", i + 1);
    if (k < 0) throw new Opaque("unbalanced backquote");
    substitution(line.slice(i + 1, k).replace(/\\`/g, "`"));
    return k + 1;
  }
  const next = line[i + 1];
  if (next === "(") {
    const arithmetic = line[i + 2] === "(";
    const j = closingParen(line, i + 2) + 1;
    if (!arithmetic) substitution(line.slice(i + 2, j - 1));
    else if (/\$\(|`/.test(line.slice(i + 3, j - 2))) throw new Opaque("a substitution in arithmetic");
    return j;
  }
  if (next === "{") {
    const k = line.indexOf("}", i + 2);
    if (k < 0) throw new Opaque("unbalanced brace");
    const inner = line.slice(i + 2, k);
    if (/\$\(|`/.test(inner)) throw new Opaque("a substitution inside a braced parameter expansion");
    return k + 1;
  }
  let j = i + 1;
  if (j < n && /[@*#?$!0-9-]/.test(line[j]!)) return j + 1;
  while (j < n && /[A-Za-z0-9_]/.test(line[j]!)) j++;
  return j;
}

/** Quotes words for display and for rules written to the store. */
export function shellQuote(word: string): string {
  if (word !== "" && /^[A-Za-z0-9_./:=@%+,-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
