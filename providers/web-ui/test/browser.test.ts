// The web UI in headless Chromium (Debian's `chromium`, driven by playwright-core; no
// browser download), against `agent serve --web` running the real kernel, the
// first-party plugins and a scripted fake Anthropic: the page opens with its token,
// a prompt streams an answer, an edit is approved from its diff in one tab while a
// second tab on the same session withdraws it, the file changes on disk, markdown is
// rendered, and an interrupt stops a turn. Requests without the token, with a foreign
// Origin or a foreign Host are refused. The sub-agent tree is driven by synthetic
// SessionTreeUpdate events (written before the kernel emitted them). Screenshots go to docs/ with UPDATE_SCREENSHOTS=1.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { type ServerEvent, ServerEventSchema } from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "../../../packages/cli/test/helpers.ts";
import { memoryContentNode } from "../../../packages/kernel/src/memory/links.ts";
import type { ClientEventInit, FrontendConnection } from "../src/connection.ts";
import { startWebUi } from "../src/server.ts";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
// Screenshots refresh docs/ only when asked (UPDATE_SCREENSHOTS=1), so a test run leaves the
// checkout as it found it; otherwise they go to a temporary directory.
const DOCS =
  process.env["UPDATE_SCREENSHOTS"] === "1"
    ? fileURLToPath(new URL("../../../docs/", import.meta.url))
    : mkdtempSync(join(tmpdir(), "web-ui-shots-"));
const CANARY = "sk-ant-canary-web-5d1e9a7c3b2f4a6e8c0d";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let server: ChildProcess;
let url = "";
let browser: Browser;

function get(
  path: string,
  headers: Record<string, string>,
  method = "GET",
  body?: string,
): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: Number(u.port), path, method, headers }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        data += d;
        // An event stream never ends: its first bytes are enough.
        if (res.headers["content-type"]?.startsWith("text/event-stream")) res.destroy();
      });
      res.on("close", () => resolve({ status: res.statusCode ?? 0, body: data }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo("web");
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
    'policy "allow_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "allow"',
    'policy "ask_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "ask"',
  );
  // The commands provider too: /rewind from the page.
  const withCommands = hcl
    .replace(
      "required_providers {",
      'required_providers {\n  commands = { source = "pluggableharness/commands", version = ">= 0.1.0" }\n  task = { source = "pluggableharness/task", version = ">= 0.1.0" }\n  widgets = { source = "pluggableharness/widgets", version = ">= 0.1.0" }\n  user = { source = "pluggableharness/user", version = ">= 0.1.0" }',
    )
    .replace(
      'tools     = ["filesystem.*", "exec.*"]',
      'tools     = ["filesystem.*", "exec.*", "commands.*", "task.*", "user.*"]',
    );
  expect(withCommands).toContain('"commands.*", "task.*", "user.*"');
  writeFileSync(join(repo, "agent.hcl"), withCommands);
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const env = {
    ...sb.env,
    XDG_RUNTIME_DIR: sb.dir("run"),
    ANTHROPIC_API_KEY: CANARY,
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  };
  server = spawn(AGENT_BIN, ["serve", "--web"], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  server.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const started = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`agent serve --web did not start:\n${out}\n${err}`)), 45_000);
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /web UI: (\S+)/.exec(out);
      if (m) {
        url = m[1]!;
        clearTimeout(t);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`agent serve exited ${code}:\n${out}\n${err}`)));
  });
  // One browser for the whole file.
  [browser] = await Promise.all([
    chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    started,
  ]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await fake?.close();
  sb?.cleanup();
});

async function open(page: Page, address: string): Promise<void> {
  await page.goto(address);
  await page.getByRole("status").filter({ hasNotText: "connecting" }).waitFor();
}

describe("the web UI in Chromium", () => {
  it("streams an answer, approves an edit from its diff, and the other tab withdraws it", async () => {
    const context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await open(page, url);
    // The token left the address bar at once (a cookie carries it now).
    expect(page.url()).not.toContain("token=");
    expect(new URL(page.url()).pathname).toBe("/");

    const words = Array.from({ length: 16 }, (_, i) => `step${i}`).join(" ");
    fake.push(
      {
        kind: "tool_calls",
        text: "Looking at calc.js.",
        calls: [
          {
            name: "filesystem__edit_file",
            args: { path: "calc.js", old_str: "return a - b;", new_str: "return a + b;" },
          },
        ],
      },
      {
        kind: "text",
        text: `Fixed **add()** in \`calc.js\` (${words}):\n\n- it adds now\n- the test passes`,
        chunks: 16,
        chunkDelayMs: 60,
      },
    );
    await page.getByRole("textbox", { name: "Message" }).fill("Fix add() in calc.js");
    await page.getByRole("textbox", { name: "Message" }).press("Enter");
    // The permission, with its diff.
    const card = page.getByRole("region", { name: "Permission: filesystem.edit_file" });
    await card.waitFor();
    await expect(card.locator(".dl.del").first().textContent()).resolves.toContain("return a - b;");
    await expect(card.locator(".dl.add").first().textContent()).resolves.toContain("return a + b;");
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a - b;");

    // A second tab on the same session sees the same request.
    const sessionUrl = page.url();
    const second = await context.newPage();
    await open(second, sessionUrl);
    const secondCard = second.getByRole("region", { name: "Permission: filesystem.edit_file" });
    await secondCard.waitFor();
    await page.screenshot({ path: join(DOCS, "web-ui-permission.png") });

    await page.bringToFront();
    await card.getByRole("button", { name: "Allow once" }).click();
    await card.waitFor({ state: "detached" });
    // The other tab withdrew it and says it was decided elsewhere.
    await secondCard.waitFor({ state: "detached" });
    await second.getByText(/edit_file\? — allowed elsewhere \(human:once\)/).waitFor();
    // Streamed: the text grows in a streaming entry before the turn's render replaces it.
    await page
      .locator(".entry.streaming.text", { hasText: "step3", hasNotText: "the test passes" })
      .waitFor();
    // The answer, rendered as markdown.
    const answer = page.locator(".entry.assistant", { hasText: "the test passes" });
    await answer.waitFor();
    await expect(answer.locator("strong", { hasText: "add()" }).count()).resolves.toBe(1);
    await expect(answer.locator("li").count()).resolves.toBe(2);
    await page.locator("body[data-status=completed]").waitFor();
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a + b;");
    // The sessions list names it.
    await page
      .getByRole("navigation", { name: "Sessions" })
      .getByRole("button", { name: /Fix add/ })
      .waitFor();
    await page.screenshot({ path: join(DOCS, "web-ui-transcript.png"), fullPage: true });

    // An interrupt from the page stops a long answer part-way.
    const story = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
    fake.push({ kind: "text", text: story, chunks: 60, chunkDelayMs: 100 });
    await page.getByRole("textbox", { name: "Message" }).fill("Tell me a story");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".entry.streaming.text", { hasText: "word2" }).waitFor();
    await page.getByRole("button", { name: "Interrupt" }).click();
    await page.locator("body[data-status=cancelled]").waitFor();
    await expect(page.locator("#transcript").textContent()).resolves.not.toContain("word59");

    const html = `${await page.content()}${await second.content()}`;
    expect(html).not.toContain(CANARY);
    await context.close();
  });

  it("runs /rewind: the plan first, then confirmed, the page goes on in the fork", async () => {
    const context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await open(page, url);
    const box = page.getByRole("textbox", { name: "Message" });
    const turn = async (text: string, content: string, answer: string) => {
      fake.push(
        { kind: "tool_calls", calls: [{ name: "filesystem__write_file", args: { path: "a.txt", content } }] },
        { kind: "text", text: answer },
      );
      await box.fill(text);
      await box.press("Enter");
      const card = page.getByRole("region", { name: "Permission: filesystem.write_file" });
      await card.getByRole("button", { name: "Allow once" }).click();
      await page.locator(".entry.assistant", { hasText: answer }).waitFor();
      await page.locator("body[data-status=completed]").waitFor();
    };
    await turn("first: write a", "one\n", "Wrote a.txt.");
    const original = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session")!;
    await turn("second: change a", "two\n", "Changed a.txt.");
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n");

    // An unknown command is refused (by the page once it knows the session's commands, else
    // by the kernel); nothing is sent as a message.
    const requests = fake.requests.length;
    await box.fill("/nosuch");
    await box.press("Enter");
    await page.getByText(/no slash command \/nosuch is registered/).waitFor();
    await box.fill("/rewind 2");
    await box.press("Enter");
    await page.getByText("~ a.txt: restore", { exact: true }).waitFor();
    await page.getByText(/^Nothing has changed yet\. To go ahead: \/rewind 2 confirm/).waitFor();
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n");
    await box.fill("/rewind 2 confirm");
    await box.press("Enter");
    const notice = page.getByText(/Rewound: continuing in [0-9A-Z]{26}\./);
    await notice.waitFor();
    const fork = /[0-9A-Z]{26}/.exec((await notice.textContent()) ?? "")![0];
    expect(fork).not.toBe(original);
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n");
    // The page is on the fork: its address, its transcript (the first turn only), and the
    // prompt it ends before back in the composer.
    await page.waitForURL(new RegExp(`#session=${fork}$`));
    await page.locator(`body[data-backfilled="${fork}"]`).waitFor();
    await page.locator(".entry.assistant", { hasText: "Wrote a.txt." }).waitFor();
    await expect(page.locator("#transcript").textContent()).resolves.not.toContain("Changed a.txt.");
    await expect(box.inputValue()).resolves.toBe("second: change a");
    expect(fake.requests.length).toBe(requests);
    await context.close();
  });

  it("completes a task from the task list's [done] button, asked first like any change", async () => {
    const context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await open(page, url);
    fake.push(
      {
        kind: "tool_calls",
        text: "Planning.",
        calls: [
          {
            name: "task__task_create",
            args: {
              tasks: [
                { title: "Read the parser", status: "completed" },
                { title: "Fix the off-by-one", status: "in_progress" },
                { title: "Add a regression test" },
              ],
            },
          },
        ],
      },
      { kind: "text", text: "Planned the work." },
    );
    await page.getByRole("textbox", { name: "Message" }).fill("Plan the parser fix");
    await page.getByRole("textbox", { name: "Message" }).press("Enter");
    // The project's policy asks before any change that is no file edit: the model's call...
    const create = page.getByRole("region", { name: "Permission: task.task_create" });
    await create.getByRole("button", { name: "Allow once" }).click();
    await page.locator(".entry.assistant", { hasText: "Planned the work." }).waitFor();
    await page.locator("body[data-status=completed]").waitFor();
    const panel = page.getByRole("region", { name: "Widgets" });
    await panel.getByText("Tasks 1/3").waitFor();
    // A button for each open task only.
    await expect(panel.getByRole("button", { name: "done" }).count()).resolves.toBe(2);
    await expect(panel.locator(".group.row", { hasText: "Read the parser" }).count()).resolves.toBe(0);
    await panel
      .locator(".group.row", { hasText: "Fix the off-by-one" })
      .getByRole("button", { name: "done" })
      .click();
    // ...and the operator's action alike: the kernel runs it through the same gate.
    const update = page.getByRole("region", { name: "Permission: task.task_update" });
    await update.waitFor();
    await expect(panel.getByText("Tasks 1/3").count()).resolves.toBe(1);
    await update.getByRole("button", { name: "Allow once" }).click();
    await panel.getByText("Tasks 2/3").waitFor();
    await panel.getByText("☑ Fix the off-by-one").waitFor();
    await expect(panel.getByRole("button", { name: "done" }).count()).resolves.toBe(1);
    await expect(
      panel.locator(".group.row", { hasText: "Add a regression test" }).getByRole("button").count(),
    ).resolves.toBe(1);
    await context.close();
  });

  it("answers an ask_user question by clicking one of its options", async () => {
    const context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    await open(page, url);
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "user__ask_user",
            args: {
              question: "Which database?",
              options: [{ label: "SQLite" }, { label: "Postgres", description: "the server one" }],
            },
          },
        ],
      },
      { kind: "text", text: "Postgres it is." },
    );
    await page.getByRole("textbox", { name: "Message" }).fill("Pick a database");
    await page.getByRole("textbox", { name: "Message" }).press("Enter");
    const card = page.getByRole("region", { name: "Question from ask_user" });
    await card.getByRole("group", { name: "Options" }).getByRole("button", { name: "Postgres" }).click();
    await page.locator(".entry.assistant", { hasText: "Postgres it is." }).waitFor();
    // The model is told the option itself, and which one it was.
    const sent = (fake.requests.at(-1)!.json as { messages: { content: unknown }[] }).messages.at(-1);
    expect(JSON.stringify(sent)).toContain('{\\"option_index\\":1}\\nPostgres');
    await context.close();
  });

  it("refuses requests without the token, from a foreign Origin, or under a foreign Host", async () => {
    const u = new URL(url);
    const host = `127.0.0.1:${u.port}`;
    const token = u.searchParams.get("token")!;
    const bearer = { authorization: `Bearer ${token}` };
    for (const path of ["/", "/app.js", "/events"]) {
      expect((await get(path, { host })).status).toBe(401);
      expect((await get(path, { host, authorization: "Bearer not-the-token-at-all-000000" })).status).toBe(
        401,
      );
    }
    expect((await get("/?token=wrong", { host })).status).toBe(401);
    // DNS rebinding: the right address under a foreign name.
    expect((await get("/", { host: `evil.example:${u.port}`, ...bearer })).status).toBe(421);
    expect((await get(`/?token=${token}`, { host: `evil.example:${u.port}` })).status).toBe(421);
    // A foreign page's request, even with the token.
    expect((await get("/events", { host, origin: "http://evil.example", ...bearer })).status).toBe(403);
    const post = (headers: Record<string, string>) =>
      get("/send", { host, "content-type": "application/json", ...headers }, "POST", JSON.stringify({}));
    expect((await post({ origin: "http://evil.example", ...bearer })).status).toBe(403);
    expect((await post({ origin: `http://127.0.0.1:${Number(u.port) + 1}`, ...bearer })).status).toBe(403);
    // A change without an Origin at all is refused too; with its own Origin it reaches the handler.
    expect((await post(bearer)).status).toBe(403);
    expect((await post({ origin: `http://${host}`, ...bearer })).status).toBe(404);
    // With the token: the page, and an event stream that greets its connection.
    expect((await get("/", { host, ...bearer })).status).toBe(200);
    const events = await get("/events", { host, ...bearer });
    expect(events.body).toContain("event: hello");

    // In the browser: a foreign origin's fetch gets nothing (no cookie, refused Origin).
    const context = await browser.newContext();
    const page = await context.newPage();
    await open(page, url);
    const foreign = await startWebUi({ connect: () => idleConnection() });
    const other = await context.newPage();
    await other.goto(foreign.url());
    const status = await other.evaluate(async (target) => {
      try {
        const r = await fetch(`${target}/send`, {
          method: "POST",
          credentials: "include",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        return r.status;
      } catch {
        return -1; // blocked by CORS: the response is not readable, and the server refused it
      }
    }, `http://127.0.0.1:${u.port}`);
    expect(status).not.toBe(204);
    await foreign.close();
    await context.close();
  });

  it("shows a memory record's [[references]] as links that open the record with /memory show", async () => {
    const feed = scriptedConnection();
    const ui = await startWebUi({ connect: () => feed.connection });
    const context = await browser.newContext({ viewport: { width: 1000, height: 600 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    try {
      const id = "01MEMORY000000000000000000";
      await page.goto(ui.url(id));
      await feed.resumed;
      const info = { sessionId: id, title: "Memory", status: SessionStatus.RUNNING, profile: "default" };
      feed.push({ sessionId: id, event: { case: "sessionAttached", value: { info } } });
      // What the kernel renders for an approved record (generic-render.ts, memory/links.ts).
      feed.push({
        sessionId: id,
        event: {
          case: "render",
          value: {
            content: {
              content: {
                root: {
                  node: {
                    case: "group",
                    value: {
                      children: [
                        {
                          node: {
                            case: "text",
                            value: { content: 'Memory approved: "commit-language"', style: 5 },
                          },
                        },
                        memoryContentNode("Write commit messages in English; see [[Style Guide]] first."),
                      ],
                    },
                  },
                },
              },
            },
          },
        },
      });
      const link = page.locator("a.memory-link", { hasText: "Style Guide" });
      await link.waitFor();
      await expect(link.getAttribute("href")).resolves.toBe("#memory:style-guide");
      // The reference stays inside its sentence, on one line.
      const line = page.locator(".group.inline", { has: link });
      await expect(line.textContent()).resolves.toBe(
        "Write commit messages in English; see Style Guide first.",
      );
      await link.click();
      await expect(page.getByRole("textbox", { name: "Message" }).inputValue()).resolves.toBe(
        "/memory show style-guide",
      );
      await page.screenshot({ path: join(DOCS, "web-ui-memory-link.png") });
    } finally {
      await context.close();
      await ui.close();
    }
  });

  it("shows the sub-agent tree from SessionTreeUpdate events, and never turns model text into markup", async () => {
    const feed = scriptedConnection();
    const ui = await startWebUi({ connect: () => feed.connection });
    const context = await browser.newContext({ viewport: { width: 1000, height: 600 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    try {
      await page.goto(ui.url("01ROOT0000000000000000000A"));
      // The page asked for the session named in its address.
      await feed.resumed;
      const info = (id: string, title: string, parent = "") => ({
        sessionId: id,
        parentSessionId: parent,
        title,
        status: SessionStatus.RUNNING,
        profile: "default",
      });
      feed.push({
        event: { case: "sessionList", value: { sessions: [info("01ROOT0000000000000000000A", "Refactor")] } },
      });
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: { case: "sessionAttached", value: { info: info("01ROOT0000000000000000000A", "Refactor") } },
      });
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "sessionTreeUpdate",
          value: {
            parentSessionId: "01ROOT0000000000000000000A",
            childSessionId: "01CHILD000000000000000000B",
            status: SessionStatus.RUNNING,
          },
        },
      });
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "sessionTreeUpdate",
          value: {
            parentSessionId: "01CHILD000000000000000000B",
            childSessionId: "01GRANDCHILD00000000000000",
            status: SessionStatus.COMPLETED,
          },
        },
      });
      const nav = page.getByRole("navigation", { name: "Sessions" });
      const children = nav.getByRole("list", { name: "sub-agents" });
      await children
        .first()
        .getByRole("button", { name: /01CHILD000.*running/ })
        .waitFor();
      await nav.getByRole("button", { name: /01GRANDCHI.*completed/ }).waitFor();
      // Nested: the grandchild's list sits inside the child's.
      await expect(children.count()).resolves.toBe(2);
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "sessionTreeUpdate",
          value: {
            parentSessionId: "01ROOT0000000000000000000A",
            childSessionId: "01CHILD000000000000000000B",
            status: SessionStatus.COMPLETED,
          },
        },
      });
      await nav.getByRole("button", { name: /01CHILD000.*completed/ }).waitFor();

      // A sub-agent's ask reaches the root's page labelled with who asks (issue 34, point 8).
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "permissionRequest",
          value: {
            planItem: { id: "item-sub", provider: "filesystem", toolName: "write_file", toolCallId: "c-sub" },
            origin: {
              sessionId: "01GRANDCHILD00000000000000",
              profile: "worker",
              depth: 2,
              parentSessionId: "01CHILD000000000000000000B",
            },
          },
        },
      });
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "permissionRequest",
          value: {
            planItem: { id: "item-own", provider: "filesystem", toolName: "edit_file", toolCallId: "c-own" },
          },
        },
      });
      const subCard = page.getByRole("region", { name: "Permission: filesystem.write_file" });
      await expect(subCard.locator(".origin").textContent()).resolves.toBe(
        "Asked by sub-agent worker (depth 2) · 01GRANDCHILD00000000000000",
      );
      // The session's own ask names no sub-agent.
      const ownCard = page.getByRole("region", { name: "Permission: filesystem.edit_file" });
      await ownCard.waitFor();
      await expect(ownCard.locator(".origin").count()).resolves.toBe(0);

      // Hostile markdown: raw HTML, a script URL, an image that would call home.
      feed.push({
        sessionId: "01ROOT0000000000000000000A",
        event: {
          case: "render",
          value: {
            content: {
              content: {
                root: {
                  node: {
                    case: "group",
                    value: {
                      children: [
                        { node: { case: "text", value: { content: "Assistant", style: 2 } } },
                        {
                          node: {
                            case: "text",
                            value: {
                              content:
                                'Done. <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> [click](javascript:window.pwned=3) ![t](http://evil.example/t.png)',
                            },
                          },
                        },
                      ],
                    },
                  },
                },
              },
            },
          },
        },
      });
      const entry = page.locator(".entry.assistant", { hasText: "Done." });
      await entry.waitFor();
      await expect(entry.locator("img, script").count()).resolves.toBe(0);
      await expect(entry.locator("a[href^='javascript']").count()).resolves.toBe(0);
      await expect(entry.textContent()).resolves.toContain("<img src=x");
      await expect(
        page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned),
      ).resolves.toBeUndefined();
      await page.screenshot({ path: join(DOCS, "web-ui-tree.png") });
    } finally {
      await context.close();
      await ui.close();
    }
  });
});

/** A connection that answers nothing (for a second, foreign-origin server). */
function idleConnection(): FrontendConnection {
  return {
    events: { [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }) },
    send() {},
    close() {},
  };
}

/** A frontend connection whose ServerEvents the test writes (synthetic kernel side). */
function scriptedConnection() {
  const queue: ServerEvent[] = [];
  let wake: (() => void) | undefined;
  let markResumed: () => void = () => {};
  const resumed = new Promise<void>((r) => {
    markResumed = r;
  });
  const sent: ClientEventInit[] = [];
  const connection: FrontendConnection = {
    events: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (queue.length > 0) yield queue.shift()!;
          await new Promise<void>((r) => {
            wake = r;
          });
        }
      },
    },
    send(e) {
      sent.push(e);
      if (e.event?.case === "resumeSession") markResumed();
    },
    close() {},
  };
  return {
    connection,
    resumed,
    sent,
    push(init: Parameters<typeof create<typeof ServerEventSchema>>[1]) {
      queue.push(create(ServerEventSchema, init));
      wake?.();
    },
  };
}
