// Checkpoints and rewind end to end: three prompts, each a turn that changes files (a new
// file, an edit, a bash command that deletes one file and writes a binary one), through
// the real `agent run -p` / `--resume` and a scripted fake Anthropic. `agent sessions
// rewind` then forks the session before a prompt and restores the files byte for byte, and
// the fork resumes with the history before that prompt.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

/** Every file under `dir` (but .git and node_modules) with its bytes, base64. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const abs = join(d, name);
      if (statSync(abs).isDirectory()) {
        if (name !== ".git" && name !== "node_modules") walk(abs);
      } else out[relative(dir, abs)] = readFileSync(abs).toString("base64");
    }
  };
  walk(dir);
  return out;
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const run = (args: string[]) =>
  agent([...args, "--output-format", "stream-json", "--headless-ask", "allow"], {
    cwd: repo,
    env,
    timeoutMs: 60_000,
  });

describe("checkpoints and agent sessions rewind", () => {
  it("restores a three-turn edit sequence byte for byte, and the fork resumes", async () => {
    const original = tree(repo);
    // Turn 1: a new file.
    fake.push(
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__write_file", args: { path: "notes/a.txt", content: "one\n" } }],
      },
      { kind: "text", text: "wrote notes/a.txt" },
    );
    const r1 = await run(["run", "-p", "first: add a note"]);
    expect(r1.code).toBe(0);
    const id = String(records(r1.stdout)[0]!["session_id"]);
    const afterFirst = tree(repo);
    expect(Object.keys(afterFirst)).toContain("notes/a.txt");

    // Turn 2: an edit of a tracked file.
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "filesystem__edit_file",
            args: { path: "calc.js", old_str: "return a - b;", new_str: "return a + b;" },
          },
        ],
      },
      { kind: "text", text: "fixed calc.js" },
    );
    expect((await run(["run", "--resume", id, "-p", "second: fix add"])).code).toBe(0);
    const afterSecond = tree(repo);
    expect(afterSecond["calc.js"]).not.toBe(original["calc.js"]);

    // Turn 3: bash deletes a file and writes a binary one (checkpoints do not depend on the tool).
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          { name: "exec__bash", args: { command: "rm test.js && printf 'b\\000\\001\\377' > data.bin" } },
        ],
      },
      { kind: "text", text: "cleaned up" },
    );
    expect((await run(["run", "--resume", id, "-p", "third: clean up"])).code).toBe(0);
    expect(existsSync(join(repo, "test.js"))).toBe(false);
    expect(readFileSync(join(repo, "data.bin"))).toEqual(Buffer.from([0x62, 0, 1, 0xff]));

    // The prompts are listed with their message ids.
    const listed = await agent(["sessions", "rewind", id], { cwd: repo, env });
    expect(listed.code).toBe(0);
    const ids = [...listed.stdout.matchAll(/^ {2}([0-9A-Z]{26}) {2}\S+ {2}(.*)$/gm)].map((m) => [
      m[1]!,
      m[2]!,
    ]);
    expect(ids.map(([, t]) => t)).toEqual(["first: add a note", "second: fix add", "third: clean up"]);
    const [first, second] = ids.map(([m]) => m!);

    // Without a terminal and without --yes: shown, refused, nothing changed.
    const refused = await agent(["sessions", "rewind", id, "--to", second!], { cwd: repo, env });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain("~ calc.js: restore");
    expect(refused.stdout).toContain("+ test.js: recreate");
    expect(refused.stdout).toContain("- data.bin: delete");
    expect(refused.stderr).toContain("--yes");
    expect(existsSync(join(repo, "data.bin"))).toBe(true);

    // Rewind to before the second prompt: the tree is as it was after the first, byte for byte.
    const back = await agent(["sessions", "rewind", id, "--to", second!, "--yes"], { cwd: repo, env });
    expect(back.stderr).toBe("");
    expect(back.code).toBe(0);
    expect(tree(repo)).toEqual(afterFirst);
    const fork = /Forked as ([0-9A-Z]{26})/.exec(back.stdout)![1]!;
    expect(fork).not.toBe(id);

    // The fork resumes with the history before the second prompt.
    fake.push({ kind: "text", text: "resumed in the fork" });
    const resumed = await run(["run", "--resume", fork, "-p", "second, differently"]);
    expect(resumed.code).toBe(0);
    expect(records(resumed.stdout).at(-1)).toMatchObject({ result: "resumed in the fork", session_id: fork });
    const sent = JSON.stringify(fake.requests.at(-1)!.json);
    expect(sent).toContain("first: add a note");
    expect(sent).toContain("wrote notes/a.txt");
    expect(sent).toContain("second, differently");
    expect(sent).not.toContain("second: fix add");
    expect(sent).not.toContain("third: clean up");

    // The original session is untouched and can be rewound all the way back.
    const start = await agent(["sessions", "rewind", id, "--to", first!, "--yes"], { cwd: repo, env });
    expect(start.code).toBe(0);
    expect(tree(repo)).toEqual(original);
  }, 180_000);
});
