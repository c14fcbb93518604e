// The plain reasons given for a local MCP server that does not start (issue 34, point 5).
import { describe, expect, it } from "vitest";
import { explainStartFailure } from "../src/why.ts";

const NODE_MISSING = `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/tmp/proj/server/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15) {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v24.1.0`;

describe("explainStartFailure", () => {
  it("names the missing module and, under /tmp in the sandbox, the private /tmp", () => {
    const sandboxed = explainStartFailure(NODE_MISSING, true)!;
    expect(sandboxed).toContain("/tmp/proj/server/index.js was not found");
    expect(sandboxed).toContain("private /tmp");
    expect(explainStartFailure(NODE_MISSING, false)).not.toContain("private /tmp");
    const elsewhere = NODE_MISSING.replace("/tmp/proj", "/home/me/proj");
    expect(explainStartFailure(elsewhere, true)).not.toContain("private /tmp");
  });

  it("names a command that does not exist or cannot run", () => {
    expect(explainStartFailure("bwrap: execvp /nonexistent/server: No such file or directory", true)).toBe(
      "the command /nonexistent/server was not found (no such file, or not on PATH)",
    );
    expect(explainStartFailure("bwrap: execvp ./srv: Permission denied", true)).toContain("not executable");
  });

  it("says nothing when it does not recognise the cause", () => {
    expect(explainStartFailure("some other failure", true)).toBeUndefined();
  });
});
