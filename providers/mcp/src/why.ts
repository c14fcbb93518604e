// Plain reasons for the common ways a local MCP server fails to start, read from what it
// wrote to stderr: the raw tail of a Node stack trace ends in `code: 'MODULE_NOT_FOUND'`,
// which names neither the missing file nor that the sandbox gave the server its own /tmp.

const underTmp = (p: string) => /^\/(var\/)?tmp(\/|$)/.test(p);

/** What went wrong, in a sentence, when the stderr tail shows a known cause; else undefined. */
export function explainStartFailure(stderr: string, sandboxed: boolean): string | undefined {
  const module = /Cannot find module '([^']+)'/.exec(stderr)?.[1];
  if (module) {
    const where = module.startsWith("/") ? module : `"${module}"`;
    const tmp =
      sandboxed && underTmp(module)
        ? ` The sandbox gives the server a private /tmp: only an existing script named on its command line is bound back into it, so anything else it loads from /tmp is missing there; move the server out of /tmp, or set sandbox = "off" in its block`
        : "";
    return `the server's module ${where} was not found (MODULE_NOT_FOUND).${tmp}`;
  }
  const exec =
    /execvp (\S+): No such file or directory/.exec(stderr)?.[1] ?? /spawn (\S+) ENOENT/.exec(stderr)?.[1];
  if (exec) return `the command ${exec} was not found (no such file, or not on PATH)`;
  const denied = /execvp (\S+): Permission denied/.exec(stderr)?.[1];
  if (denied) return `the command ${denied} is not executable (permission denied)`;
  return undefined;
}
