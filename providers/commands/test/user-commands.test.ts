// User commands from .agent/commands/*.md: frontmatter, $ARGUMENTS and $1… as the spec's
// placeholders (the kernel's expansion fills them), and files that cannot be commands
// reported rather than loaded.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { expandTemplate } from "../../../packages/kernel/src/frontends/hub.ts";
import { loadUserCommands, MAX_COMMAND_BYTES, parseFrontmatter, toTemplate } from "../src/user-commands.ts";

const dir = mkdtempSync(join(tmpdir(), "user-commands-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("user commands", () => {
  it("reads frontmatter and the prompt, and substitutes arguments the way Claude Code does", () => {
    const d = join(dir, "a");
    mkdirSync(d);
    writeFileSync(
      join(d, "review.md"),
      '---\ndescription: "Review a file"\narguments: <file>\n---\nReview $ARGUMENTS carefully.\n',
    );
    writeFileSync(join(d, "pair.md"), "Compare $1 with $2.\n");
    writeFileSync(join(d, "hint.md"), "---\nargument-hint: <topic>\n---\nExplain the design.\n");
    const { commands, problems } = loadUserCommands([d]);
    expect(problems).toEqual([]);
    const by = Object.fromEntries(commands.map((c) => [c.name, c]));
    expect(by["review"]!.description).toBe("Review a file (<file>)");
    expect(expandTemplate(by["review"]!.template, "src/a.ts")).toBe("Review src/a.ts carefully.");
    expect(by["pair"]!.description).toBe("Compare $1 with $2.");
    expect(expandTemplate(by["pair"]!.template, "x.ts y.ts")).toBe("Compare x.ts with y.ts.");
    // Declared arguments that the prompt never places follow it.
    expect(expandTemplate(by["hint"]!.template, "caching")).toBe("Explain the design.\n\nArguments: caching");
  });

  it("reports files that cannot be commands and keeps the rest", () => {
    const d = join(dir, "b");
    mkdirSync(d);
    writeFileSync(join(d, "bad name.md"), "x");
    writeFileSync(join(d, "empty.md"), "---\ndescription: nothing\n---\n\n");
    writeFileSync(join(d, "huge.md"), "x".repeat(MAX_COMMAND_BYTES + 1));
    writeFileSync(join(d, "ok.md"), "Do it.");
    writeFileSync(join(d, "notes.txt"), "not a command");
    const { commands, problems } = loadUserCommands([d, join(dir, "missing")]);
    expect(commands.map((c) => c.name)).toEqual(["ok"]);
    expect(problems.map((p) => p.message)).toEqual([
      expect.stringContaining("is not a command name"),
      expect.stringContaining("no prompt text"),
      expect.stringContaining("limit"),
    ]);
  });

  it("parses frontmatter only when it opens the file", () => {
    expect(parseFrontmatter("no frontmatter\n---\nx: y\n---\n").fields).toEqual({});
    expect(parseFrontmatter("---\r\nDescription: d\r\n---\r\nbody").fields).toEqual({ description: "d" });
    expect(toTemplate("$ARGUMENTS $1 $10 {keep}")).toBe("{args} {1} $10 {keep}");
  });
});
