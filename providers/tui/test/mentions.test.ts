// @path mentions: Tab completion relative to the working directory that leaves out
// what .gitignore excludes, and attachments that are bounded, refuse binaries and the
// agent's own files, and send images as images.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { completeMention, MAX_TEXT_BYTES, mentionsIn, readMentions } from "../src/mentions.ts";

const root = mkdtempSync(join(tmpdir(), "mentions-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, "src", "parser"), { recursive: true });
mkdirSync(join(root, "build"));
writeFileSync(join(root, ".gitignore"), "build/\n*.log\n");
writeFileSync(join(root, "src", ".gitignore"), "generated.ts\n");
writeFileSync(join(root, "src", "app.ts"), "export const app = 1;\n");
writeFileSync(join(root, "src", "apple.ts"), "x\n");
writeFileSync(join(root, "src", "generated.ts"), "x\n");
writeFileSync(join(root, "debug.log"), "x\n");
writeFileSync(join(root, "build", "out.js"), "x\n");
writeFileSync(join(root, "bin.dat"), Buffer.from([1, 2, 0, 3]));
writeFileSync(join(root, "big.txt"), "a".repeat(MAX_TEXT_BYTES + 1));
writeFileSync(join(root, "agent.hcl"), "# config\n");
symlinkSync(join(root, "agent.hcl"), join(root, "link.hcl"));
writeFileSync(join(root, "pic.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47]));

describe("@path completion", () => {
  it("completes a unique entry, a directory with a slash, and the common part of several", () => {
    expect(completeMention("see @src/ap", 11, root)).toEqual({
      text: "see @src/app",
      cursor: 12,
      choices: ["app.ts", "apple.ts"],
    });
    expect(completeMention("see @sr", 7, root)).toMatchObject({ text: "see @src/", choices: [] });
    expect(completeMention("@src/app.", 9, root)).toMatchObject({ text: "@src/app.ts" });
  });

  it("does not offer what .gitignore excludes, at the root or in a nested directory", () => {
    expect(completeMention("@bu", 3, root)?.choices).toEqual([]);
    expect(completeMention("@bu", 3, root)?.text).toBe("@bu");
    expect(completeMention("@debug", 6, root)?.text).toBe("@debug");
    expect(completeMention("@src/gen", 8, root)?.text).toBe("@src/gen");
  });

  it("only completes a mention the cursor ends", () => {
    expect(completeMention("email me@src", 12, root)).toBeUndefined();
    expect(mentionsIn("a @x b @y\\ z").map((m) => m.path)).toEqual(["x", "y z"]);
  });
});

describe("@path attachments", () => {
  it("attaches text files, sends images as images, leaves non-paths as text", () => {
    const r = readMentions("look at @src/app.ts and @pic.png, cc @nobody", root, [join(root, "agent.hcl")]);
    expect(r).toMatchObject({
      ok: true,
      attachments: [
        { kind: "text", path: "src/app.ts", text: "export const app = 1;\n" },
        { kind: "image", path: "pic.png", mediaType: "image/png" },
      ],
    });
  });

  it("refuses a binary file, an oversized file, a directory and the agent's own files (through a link too)", () => {
    const prot = [join(root, "agent.hcl"), join(root, ".agent")];
    expect(readMentions("@bin.dat", root, prot)).toMatchObject({
      ok: false,
      error: expect.stringContaining("binary"),
    });
    expect(readMentions("@big.txt", root, prot)).toMatchObject({
      ok: false,
      error: expect.stringContaining("bytes"),
    });
    expect(readMentions("@src", root, prot)).toMatchObject({
      ok: false,
      error: expect.stringContaining("directory"),
    });
    expect(readMentions("@agent.hcl", root, prot)).toMatchObject({
      ok: false,
      error: expect.stringContaining("belongs to the agent"),
    });
    expect(readMentions("@link.hcl", root, prot)).toMatchObject({
      ok: false,
      error: expect.stringContaining("belongs to the agent"),
    });
  });
});
