// What the defaults detect: git only in a repository, LSP only for a language the project
// has whose server can be run (bundled for TypeScript/JavaScript, else in the project or on PATH).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { detectCapabilities, explorerTools } from "../src/index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function project(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), "defaults-caps-"));
  dirs.push(d);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(d, name, ".."), { recursive: true });
    writeFileSync(join(d, name), text);
    if (name.includes("bin/")) chmodSync(join(d, name), 0o755);
  }
  return d;
}

describe("default capabilities", () => {
  it("finds no git outside a repository and no LSP for a project with no known language", () => {
    const d = project({ "notes.txt": "x" });
    expect(detectCapabilities(d, { PATH: "" })).toEqual({ git: false, lsp: undefined });
  });

  it("offers git in a repository, and LSP only where the language's server is found", () => {
    const d = project({ ".git/HEAD": "ref: refs/heads/main\n", "pyproject.toml": "", "go.mod": "" });
    // A Python and Go project, no server anywhere: git yes, LSP no.
    expect(detectCapabilities(d, { PATH: "" })).toEqual({ git: true, lsp: undefined });
    // pyright in the project's virtualenv, gopls on PATH (an executable, not just a file).
    const bin = project({ "bin/gopls": "#!/bin/sh\n" });
    writeFileSync(join(d, "pyproject.toml"), "");
    mkdirSync(join(d, ".venv", "bin"), { recursive: true });
    writeFileSync(join(d, ".venv", "bin", "pyright-langserver"), "#!/bin/sh\n");
    chmodSync(join(d, ".venv", "bin", "pyright-langserver"), 0o755);
    const caps = detectCapabilities(d, { PATH: join(bin, "bin") });
    expect(caps.lsp).toEqual({
      servers: { python: "pyright-langserver --stdio", go: "gopls" },
      extensions: { ".py": "python", ".pyi": "python", ".go": "go" },
      languages: ["python", "go"],
    });
    // The explorer reads with git and LSP, and is given nothing that writes.
    expect(explorerTools(caps)).toEqual(expect.arrayContaining(["git.git_diff", "lsp.*"]));
    expect(
      explorerTools(caps).some(
        (t) => /write|edit|commit|exec|\.\*$/.test(t) && !/^(search|web|lsp)\./.test(t),
      ),
    ).toBe(false);
  });

  it("turns LSP on for a TypeScript/JavaScript project with the bundled server", () => {
    const d = project({ "package.json": "{}" });
    expect(detectCapabilities(d, { PATH: "" }).lsp).toEqual({
      servers: {},
      extensions: {},
      languages: ["typescript"],
    });
  });
});
