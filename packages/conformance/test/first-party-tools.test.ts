// Rules every first-party tool provider must keep, checked across all of them at once
// over the real plugin boundary, on each transport (a process, a worker thread): the RPC surface, static schemas, honest concurrency
// declarations, exit_status only from the process-backed operation, and relative paths
// resolved against the call's working directory.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { equals, type JsonObject } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import {
  type GetSchemaResponse,
  GetSchemaResponseSchema,
  ToolErrorCategory,
  ToolKind,
} from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolHarness, TRANSPORTS } from "../src/index.ts";

const PROVIDERS = ["filesystem", "search", "exec", "git", "web", "user", "task", "memory"] as const;
type Provider = (typeof PROVIDERS)[number];
const main = (p: Provider) => fileURLToPath(new URL(`../../../providers/${p}/src/main.ts`, import.meta.url));

/**
 * Resources that declare safe: true without key_fields, each with the reason two of its
 * calls can never touch the same thing. Anything else must key or lock.
 */
/** Resources whose calls can never conflict, with why (none today: task_create takes a provider lock). */
const NEVER_CONFLICT: Readonly<Record<string, string>> = {};

describe.each(TRANSPORTS)("over the %s transport", (isolation) => {
  const SEARCH_KEY = "bsk-first-party-7c1d";
  let base: string;
  let root: string;
  let server: Server;
  let serverUrl: string;
  let networkHits = 0;
  const h = {} as Record<Provider, ToolHarness>;
  const schemaBeforeConfigure = {} as Record<Provider, GetSchemaResponse>;
  const schemaMs = {} as Record<Provider, number>;

  const config = (p: Provider): JsonObject =>
    ({
      filesystem: { roots: [root] },
      search: { roots: [root] },
      exec: { roots: [root], kill_grace_ms: 300 },
      git: { roots: [base] },
      web: { allow_private_network: true, search_api_key: SEARCH_KEY, search_base_url: serverUrl },
      user: {},
      task: {},
      memory: { store: "sqlite", global_dir: join(base, "memory-global") },
    })[p];

  beforeAll(async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ph-first-party-")));
    root = join(base, "root");
    mkdirSync(join(root, "sub"), { recursive: true });
    writeFileSync(join(root, "a.txt"), "top level\n");
    writeFileSync(join(root, "sub", "a.txt"), "inside sub\n");
    writeFileSync(
      join(root, "sub", "n.ipynb"),
      `${JSON.stringify({ cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 }, null, 1)}\n`,
    );
    // The git provider's repository: the root, with a bare remote beside it.
    const git = (cwd: string, ...a: string[]) => execFileSync("git", a, { cwd, stdio: "pipe" });
    git(root, "init", "-q", "-b", "main");
    git(root, "config", "user.name", "T");
    git(root, "config", "user.email", "t@example.com");
    git(root, "add", "-A");
    git(root, "commit", "-q", "-m", "initial");
    mkdirSync(join(base, "remote.git"));
    git(join(base, "remote.git"), "init", "-q", "--bare");
    git(root, "remote", "add", "origin", join(base, "remote.git"));
    server = createServer((req, res) => {
      networkHits++;
      if ((req.url ?? "").startsWith("/res/v1/web/search")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ web: { results: [{ title: "T", url: "https://e.com/", description: "d" }] } }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("hello from loopback\n");
    });
    serverUrl = await new Promise<string>((resolve) =>
      server.listen(0, "127.0.0.1", () =>
        resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      ),
    );
    await Promise.all(
      PROVIDERS.map(async (p) => {
        h[p] = new ToolHarness({ executable: main(p), name: p, isolation });
        expect(h[p].plugin.host.isolation).toBe(isolation);
        await h[p].plugin.host.start();
        const t0 = performance.now();
        schemaBeforeConfigure[p] = await h[p].client.getSchema({});
        schemaMs[p] = performance.now() - t0;
        await h[p].configure(config(p));
      }),
    );
  });

  afterAll(async () => {
    await Promise.all(PROVIDERS.map((p) => h[p]?.close()));
    await new Promise((r) => server?.close(r));
    rmSync(base, { recursive: true, force: true });
  });

  const schemas = async (): Promise<Record<Provider, GetSchemaResponse>> =>
    Object.fromEntries(
      await Promise.all(PROVIDERS.map(async (p) => [p, await h[p].client.getSchema({})] as const)),
    ) as Record<Provider, GetSchemaResponse>;

  describe("first-party tool providers", () => {
    it("every first-party tool provider serves Describe, GetSchema, Configure and Invoke", async () => {
      for (const p of PROVIDERS) {
        const producer = (await h[p].client.describe({})).producer;
        expect(producer, p).toMatchObject({ name: p, category: PluginCategory.TOOL, protocolVersion: 1 });
        expect(producer?.version, p).toMatch(/^\d+\.\d+\.\d+/);
        expect((await h[p].client.getSchema({})).tools.length, p).toBeGreaterThan(0);
        expect(await h[p].configureErrors(config(p)), p).toEqual([]);
        const unknown = await h[p].invoke("no_such_operation", {}, { cwd: root });
        expect(unknown.events, p).toHaveLength(1);
        expect(unknown.error?.category, p).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
      }
    });

    it("GetSchema is static: the same answer before and after Configure, fast, with no network request", async () => {
      const after = await schemas();
      for (const p of PROVIDERS) {
        expect(equals(GetSchemaResponseSchema, schemaBeforeConfigure[p], after[p]), p).toBe(true);
        expect(schemaMs[p], p).toBeLessThan(1_000);
      }
      // The web provider was pointed at the loopback server; schemas never reached it.
      expect(networkHits).toBe(0);
    });

    it("no operation claims safe: true without key_fields where two of its calls could touch the same resource", async () => {
      const all = await schemas();
      const offenders: string[] = [];
      for (const p of PROVIDERS) {
        for (const t of all[p]!.tools) {
          if (t.kind !== ToolKind.RESOURCE) continue;
          const c = t.concurrency;
          const keyed = c?.safe === true && c.keyFields.length > 0;
          const locked = !c || c.safe === false;
          if (!keyed && !locked && !NEVER_CONFLICT[`${p}.${t.name}`]) offenders.push(`${p}.${t.name}`);
        }
      }
      expect(offenders).toEqual([]);
    });

    it("data sources declare safe: true without key_fields", async () => {
      const all = await schemas();
      const sources = PROVIDERS.flatMap((p) =>
        all[p]!.tools.filter((t) => t.kind === ToolKind.DATA_SOURCE).map((t) => ({ p, t })),
      );
      expect(sources.length).toBeGreaterThanOrEqual(6);
      // background_read advances its process's read cursor: reads of one process serialize
      // on its id (docs/decisions/tools.md, "Shell, diagnostics, checkpoints").
      const keyed: Record<string, string[]> = { "exec.background_read": ["id"] };
      for (const { p, t } of sources) {
        expect(t.concurrency, `${p}.${t.name}`).toMatchObject({
          safe: true,
          keyFields: keyed[`${p}.${t.name}`] ?? [],
        });
      }
    });

    it("only the process-backed bash emits exit_status, exactly once; no other operation emits one", async () => {
      const cwd = join(root, "sub");
      const calls: [Provider, string, JsonObject][] = [
        ["exec", "bash", { command: "echo hi" }],
        ["exec", "background_start", { command: "cat", keep_stdin_open: true }],
        ["exec", "background_list", {}],
        ["exec", "background_write", { id: "bg1", input: "x\n", close: true }],
        ["exec", "background_read", { id: "bg1", wait_ms: 2000 }],
        ["exec", "background_stop", { id: "bg1" }],
        ["filesystem", "write_file", { path: "w.txt", content: "one\n" }],
        ["filesystem", "read_file", { path: "w.txt" }],
        ["filesystem", "edit_file", { path: "w.txt", old_str: "one", new_str: "two" }],
        ["filesystem", "multi_edit", { path: "w.txt", edits: [{ old_str: "two", new_str: "three" }] }],
        [
          "filesystem",
          "apply_patch",
          { patch: "*** Begin Patch\n*** Update File: w.txt\n@@\n-three\n+four\n*** End Patch" },
        ],
        ["filesystem", "edit_files", { changes: [{ path: "e.txt", action: "create", content: "e\n" }] }],
        ["filesystem", "notebook_edit", { path: "n.ipynb", mode: "insert", source: "x = 1" }],
        ["filesystem", "list_directory", {}],
        ["git", "git_status", {}],
        ["git", "git_diff", {}],
        ["git", "git_log", {}],
        ["git", "git_show", {}],
        ["git", "git_blame", { path: "a.txt" }],
        ["git", "git_stage", { paths: ["w.txt", "e.txt", "n.ipynb"] }],
        ["git", "git_commit", { message: "more" }],
        ["git", "git_branch_create", { name: "b1" }],
        ["git", "git_switch", { branch: "b1" }],
        ["git", "git_stash", { action: "list" }],
        ["git", "git_push", { set_upstream: true }],
        ["search", "glob", { pattern: "*.txt" }],
        ["search", "grep", { pattern: "sub" }],
        ["web", "web_fetch", { url: `${serverUrl}/page.txt` }],
        ["web", "web_search", { query: "anything" }],
        ["task", "task_create", { tasks: [{ title: "x" }] }],
        ["task", "task_update", { id: "t1", status: "completed" }],
        ["task", "task_list", {}],
        ["user", "ask_user", { question: "Which one?" }],
        ["memory", "remember", { type: "user", title: "Prefers tabs", content: "Indent with tabs." }],
        ["memory", "search", { query: "tabs" }],
        ["memory", "forget", { id: "prefers-tabs" }],
      ];
      // Every declared operation is exercised.
      const all = await schemas();
      const declared = PROVIDERS.flatMap((p) => all[p]!.tools.map((t) => `${p}.${t.name}`)).sort();
      expect(calls.map(([p, t]) => `${p}.${t}`).sort()).toEqual(declared);
      for (const [p, tool, args] of calls) {
        const run = await h[p].invoke(tool, args, { cwd });
        const exits = run.events.filter((e) => e.event.case === "exitStatus").length;
        const terminal = run.events.at(-1)?.event.case;
        expect(terminal === "result" || terminal === "error", `${p}.${tool} ended with ${terminal}`).toBe(
          true,
        );
        if (tool !== "ask_user") expect(run.error, `${p}.${tool}`).toBeUndefined();
        expect(exits, `${p}.${tool}`).toBe(tool === "bash" ? 1 : 0);
      }
    });

    it("process-backed operations resolve a relative path against call_context.working_directory", async () => {
      const cwd = join(root, "sub");
      const read = await h.filesystem.invoke("read_file", { path: "a.txt" }, { cwd });
      expect(read.result?.["content"]).toContain("inside sub");
      const bash = await h.exec.invoke("bash", { command: "cat a.txt" }, { cwd });
      expect(bash.result?.["output"]).toBe("inside sub\n");
      const grep = await h.search.invoke(
        "grep",
        { pattern: "level|sub", output_mode: "files_with_matches" },
        { cwd },
      );
      expect(JSON.stringify(grep.result)).toContain("a.txt");
      expect(JSON.stringify(grep.result)).not.toContain("top level");
      const fromTop = await h.search.invoke(
        "grep",
        { pattern: "top level", output_mode: "files_with_matches" },
        { cwd },
      );
      expect(fromTop.result, "a relative search stays inside the working directory").toBeDefined();
      expect(JSON.stringify(fromTop.result)).not.toContain("a.txt");
      const wrote = await h.filesystem.invoke("write_file", { path: "made.txt", content: "x\n" }, { cwd });
      expect(wrote.error).toBeUndefined();
      const listed = await h.filesystem.invoke("list_directory", {}, { cwd });
      expect(JSON.stringify(listed.result)).toContain("made.txt");
      const top = await h.filesystem.invoke("list_directory", {}, { cwd: root });
      expect(JSON.stringify(top.result)).not.toContain("made.txt");
    });

    it("Configure without a required attribute is refused with an ERROR diagnostic naming it", async () => {
      for (const p of ["filesystem", "search"] as const) {
        const required = (schemaBeforeConfigure[p].configSchema?.attributes ?? []).filter((a) => a.required);
        expect(
          required.map((a) => a.name),
          p,
        ).toEqual(["roots"]);
        const res = await h[p].client.configure({ config: {} });
        const errors = (res.result?.diagnostics ?? []).filter((d) => d.severity === DiagnosticSeverity.ERROR);
        expect(
          errors.map((d) => d.summary),
          p,
        ).toEqual(['Missing required attribute "roots"']);
        await h[p].configure(config(p));
      }
    });
  });
});
