// Slash commands, mentions and attachments in the real `agent` binary in a real
// pseudo-terminal (tmux on a private socket), against the loopback Anthropic fake:
// /model switches the model the vendor is asked for next; /plan withholds the tools
// that change things; /permissions lists a session approval and revoking it makes the
// next such call ask again; a user command from .agent/commands expands with its
// arguments; Tab completes an @path, whose contents go with the message; the agent's
// own files are refused; an @image reaches the vendor as an image block; /compact has the
// compactor summarise the conversation, and the next turn is sent the shorter history.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, type RecordedRequest, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, PNG, type Sandbox, sandbox } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "cmd");
const keys = (...k: string[]) => tmux("send-keys", "-t", "cmd", ...k);
const type = (text: string) => tmux("send-keys", "-t", "cmd", "-l", text);

const waitFor = (pattern: string | RegExp, timeoutMs?: number) => waitForText(pane, pattern, timeoutMs);

const occurrences = (text: string, pattern: string | RegExp) =>
  typeof pattern === "string"
    ? text.split(pattern).length - 1
    : (text.match(new RegExp(pattern.source, "g")) ?? []).length;

/** Runs `action`, then waits until the pane shows `pattern` once more than before. */
async function step(action: () => void, pattern: string | RegExp, timeoutMs = 20_000): Promise<string> {
  const before = occurrences(pane(), pattern);
  action();
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = pane();
    if (occurrences(text, pattern) > before) return text;
    if (Date.now() > end)
      throw new Error(`timed out waiting for another ${pattern}:\n${text.split("\n").slice(-60).join("\n")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Body {
  model: string;
  tools?: { name: string }[];
  messages: { role: string; content: string | { type: string; text?: string; source?: unknown }[] }[];
}
const body = (r: RecordedRequest | undefined) => r?.json as Body;
const lastUser = (b: Body) => b.messages.filter((m) => m.role === "user").at(-1)!;
const userText = (b: Body) => {
  const c = lastUser(b).content;
  return typeof c === "string" ? c : c.map((x) => x.text ?? "").join("\n");
};
/** Model requests (not token counts) the fake has answered. */
const modelRequests = () => fake.requests.filter((r) => r.path.endsWith("/v1/messages"));

const HCL = `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  exec = { source = "pluggableharness/exec", version = ">= 0.1.0" }
  commands = { source = "pluggableharness/commands", version = ">= 0.1.0" }
  compactor = { source = "pluggableharness/compactor", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
provider "filesystem" { roots = [env("FIXTURE_ROOT")] }
provider "exec" { roots = [env("FIXTURE_ROOT")] }

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}
policy "ask_changes" {
  match  = { kind = "resource" }
  action = "ask"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools          = ["filesystem.*", "exec.*", "commands.*"]
  slash_commands = ["*"]
  max_turns      = 10
}
`;

beforeAll(() => {
  sb = sandbox();
  socket = join(sb.home, "tmux.sock");
});

afterAll(async () => {
  try {
    tmux("kill-server");
  } catch {
    // already gone
  }
  await fake?.close();
  sb?.cleanup();
});

describe("agent run in a terminal: slash commands and attachments", () => {
  it("switches the model, toggles plan mode, revokes an approval, runs a user command and attaches files", async () => {
    const repo = sb.repo("cmd");
    writeFileSync(join(repo, "agent.hcl"), HCL);
    mkdirSync(join(repo, ".agent", "commands"), { recursive: true });
    writeFileSync(
      join(repo, ".agent", "commands", "review.md"),
      "---\ndescription: Review a file for bugs\narguments: <file>\n---\nReview $ARGUMENTS for bugs, then list them.\n",
    );
    writeFileSync(join(repo, "shot.png"), PNG);
    writeFileSync(join(repo, ".gitignore"), "secret-notes.txt\n");
    writeFileSync(join(repo, "secret-notes.txt"), "ignored\n");
    let n = 0;
    fake = await startFakeVendor({
      vendor: "anthropic",
      whenExhausted: "repeat-last",
      script: (req) => {
        const b = req.json as Body | undefined;
        if (!b?.messages) return { kind: "text", text: "ok" };
        const last = b.messages.at(-1)!;
        const text = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
        // A fresh "run date" asks for the shell; its result gets a plain answer.
        // The compactor's summary request quotes the conversation, "run date" included.
        if (JSON.stringify(b).includes("the earlier part of the conversation as a transcript")) {
          return { kind: "text", text: "Summary: the user ran date and asked about calc.js." };
        }
        if (last.role === "user" && text.includes("run date") && !text.includes("tool_result")) {
          return { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: "date" } }] };
        }
        return { kind: "text", text: `answer ${++n}.` };
      },
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-cmd.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "cmd", "-x", "120", "-y", "50", script);
    await waitFor("/help for keys");

    // /help lists the provider's commands and the user's.
    let text = await step(() => keys("/help", "Enter"), "/review");
    expect(text).toMatch(/\/model\s+Show the models/);
    expect(text).toMatch(/\/review\s+Review a file for bugs \(<file>\) \(commands, prompt\)/);

    // /model without an argument lists the choices, the current one marked.
    text = await step(() => keys("/model", "Enter"), "/model <provider/model> switches");
    expect(text).toContain("anthropic/claude-sonnet-5  ← current");
    expect(text).toContain("anthropic/claude-haiku-4-5-20251001");
    expect(modelRequests()).toHaveLength(0);

    // /model <id>: the next turn is asked of that model.
    await step(
      () => keys("/model claude-haiku-4-5-20251001", "Enter"),
      "Switched: the next turn uses anthropic/claude-haiku-4-5-20251001.",
    );
    await step(() => keys("hello", "Enter"), /answer \d+\./);
    let b = body(modelRequests().at(-1));
    expect(b.model).toBe("claude-haiku-4-5-20251001");
    // The commands are the operator's: the model is never offered them.
    const names = (b.tools ?? []).map((t) => t.name);
    expect(names).toContain("exec__bash");
    expect(names.some((x) => x.startsWith("commands__"))).toBe(false);

    // /plan: tools that change things are withheld until /plan again.
    await step(() => keys("/plan", "Enter"), "Plan mode is on");
    await step(() => keys("what next?", "Enter"), /answer \d+\./);
    b = body(modelRequests().at(-1));
    expect((b.tools ?? []).map((t) => t.name)).not.toContain("exec__bash");
    expect((b.tools ?? []).map((t) => t.name)).toContain("filesystem__read_file");
    await step(() => keys("/plan", "Enter"), "Plan mode is off");
    await step(() => keys("and now?", "Enter"), /answer \d+\./);
    expect((body(modelRequests().at(-1)).tools ?? []).map((t) => t.name)).toContain("exec__bash");

    // An approval for the session, listed by /permissions, revoked: the next call asks.
    await step(() => keys("run date", "Enter"), "Allow exec.bash");
    await step(() => keys("s"), /answer \d+\./);
    text = await step(() => keys("/permissions", "Enter"), "/permissions revoke <#> drops one.");
    expect(text).toMatch(/1\s+allow\s+exec\.bash\s+date\s+this session/);
    await step(() => keys("run date", "Enter"), /answer \d+\./);
    const asked = (pane().match(/Allow exec\.bash/g) ?? []).length;
    await step(() => keys("/permissions revoke 1", "Enter"), "Revoked: allow exec.bash command date");
    await step(() => keys("run date", "Enter"), "y this call");
    expect((pane().match(/Allow exec\.bash/g) ?? []).length).toBe(asked + 1);
    await step(() => keys("n"), /answer \d+\./);

    // A user command expands into the message, arguments in place.
    const before = modelRequests().length;
    await step(() => keys("/review calc.js", "Enter"), /answer \d+\./);
    expect(modelRequests().length).toBe(before + 1);
    expect(userText(body(modelRequests().at(-1)))).toBe("Review calc.js for bugs, then list them.");

    // Tab completes @path (ignored files are not offered); the file goes with the message.
    type("explain @cal");
    keys("Tab");
    await waitFor("explain @calc.js");
    type("@secret");
    keys("Tab");
    await waitFor("No matching file");
    keys("C-u");
    await step(() => {
      type("explain @calc.js");
      keys("Enter");
    }, /answer \d+\./);
    const sent = userText(body(modelRequests().at(-1)));
    expect(sent).toContain("explain @calc.js");
    expect(sent).toContain('<file path="calc.js">');
    expect(sent).toContain(readFileSync(join(repo, "calc.js"), "utf8").split("\n")[0]);

    // The agent's own files are not attached, and nothing is sent.
    const count = modelRequests().length;
    await step(() => keys("what is in @agent.hcl", "Enter"), "@agent.hcl belongs to the agent itself");
    expect(modelRequests().length).toBe(count);
    keys("C-u");

    // An image mention: an image block, base64 as the vendor takes it.
    await step(() => keys("look at @shot.png", "Enter"), /answer \d+\./);
    const content = lastUser(body(modelRequests().at(-1))).content as { type: string; source?: unknown }[];
    expect(content).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "image",
          source: { type: "base64", media_type: "image/png", data: PNG.toString("base64") },
        }),
      ]),
    );

    // /sessions lists this directory's sessions; /clear starts a fresh one; /resume with a
    // prefix goes back to the first, its history replayed.
    const first = /Session (\w{26}) · profile default/.exec(pane())![1]!;
    text = await step(
      () => keys("/sessions", "Enter"),
      "/resume <id> (or /resume for a picker) continues one.",
    );
    expect(text).toContain(first.slice(0, 10));
    await step(() => keys("/clear", "Enter"), "── new session ──");
    const fresh = await waitFor(/Session (\w{26}) · profile default/);
    const second = /Session (\w{26}) · profile default/.exec(fresh)![1]!;
    expect(second).not.toBe(first);
    expect(pane()).not.toContain("answer 1.");
    await step(() => keys("hello again", "Enter"), /answer \d+\./);
    expect(body(modelRequests().at(-1)).messages).toHaveLength(1);
    await step(() => keys(`/resume ${first.slice(0, 12)}`, "Enter"), "── end of history ──");
    expect(pane()).toContain("answer 1.");
    await step(() => keys("back", "Enter"), /answer \d+\./);
    const long = body(modelRequests().at(-1)).messages.length;
    expect(long).toBeGreaterThan(10);

    // /compact: the compactor's summary call carries the operator's guidance, and the next
    // turn is sent the compacted history instead of the long one.
    const beforeCompact = modelRequests().length;
    await step(() => keys("/compact keep the calc.js notes", "Enter"), /Compacted the conversation \(/);
    const summaryCalls = modelRequests().slice(beforeCompact);
    expect(summaryCalls.length).toBeGreaterThan(0);
    expect(JSON.stringify(summaryCalls.map((r) => r.json))).toContain("keep the calc.js notes");
    await step(() => keys("after compacting", "Enter"), /answer \d+\./);
    const compacted = body(modelRequests().at(-1)).messages.length;
    expect(compacted).toBeLessThan(long);
    const latest = JSON.stringify(body(modelRequests().at(-1)).messages);
    expect(latest).toContain("Summary: the user ran date and asked about calc.js.");
    expect(userText(body(modelRequests().at(-1)))).toMatch(/after compacting$/);

    keys("C-c");
    keys("C-c");
    await waitFor("AGENT_EXIT=0");
  }, 90_000);
});
