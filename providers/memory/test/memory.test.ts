// The memory provider over the real go-plugin process boundary, for both stores: the
// MemoryService write/read side (slugs made unique, [[links]], not_found, immutable type and
// scope, approve/reject), Recall within the budget by the kernel's token counts and
// per the taxonomy (pending never, session scope only for its session, project records decay
// fastest), the memory.* tools in the same process (near-match check, search with FTS5 for
// SQLite), secrets refused, and markdown files edited by hand picked up on the next recall.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LaunchedPlugin, launchPlugin, runConformance } from "@pluggableharness/conformance";
import { HookPoint, PluginCategory } from "@pluggableharness/protocol/common";
import {
  type MemoryRecord,
  MemoryScope,
  MemoryService,
  MemoryType,
  RecordStatus,
} from "@pluggableharness/protocol/memory";
import { RiskClass, ToolErrorCategory, ToolKind, ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const text = (r: MemoryRecord) => (r.content[0]?.block.case === "text" ? r.content[0].block.value.text : "");
const block = (t: string) => [{ block: { case: "text" as const, value: { text: t } } }];
const SECRET = `sk-ant-api03-${"Q".repeat(40)}`;

describe.each(["markdown", "sqlite"] as const)("the %s store", (store) => {
  let root: string;
  let project: string;
  let globalDir: string;
  let plugin: LaunchedPlugin;
  const mem = () => plugin.host.client(MemoryService);
  const tools = () => plugin.host.client(ToolService);
  const ctx = (sessionId = "01SESSIONA") => ({
    callContext: { sessionId, turnId: "01TURN", workingDirectory: project },
  });

  async function invoke(toolName: string, args: Record<string, unknown>, sessionId = "01SESSIONA") {
    let result: Record<string, unknown> | undefined;
    let error: { category: number; message: string } | undefined;
    for await (const res of tools().invoke({
      call: {
        id: `c${Math.random()}`,
        toolName,
        arguments: args as never,
        callContext: ctx(sessionId).callContext,
      },
    })) {
      const e = res.event?.event;
      if (e?.case === "result") result = e.value.payload as Record<string, unknown>;
      if (e?.case === "error") error = { category: e.value.category, message: e.value.message };
    }
    return { result, error };
  }
  const recall = (over: Record<string, unknown> = {}) =>
    mem().recall({
      sessionId: "01SESSIONA",
      turnId: "01TURN",
      tokenBudget: 4000n,
      workingDirectory: project,
      ...over,
    });

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), `ph-mem-${store}-`)));
    project = join(root, "project");
    globalDir = join(root, "data", "agent", "memory");
    mkdirSync(join(project, ".git"), { recursive: true });
    plugin = launchPlugin({
      executable: MAIN,
      name: "memory",
      isolation: "process",
      env: { XDG_DATA_HOME: join(root, "data") },
    });
    const res = await mem().configure({ config: { store } });
    expect(res.result?.diagnostics ?? []).toEqual([]);
  });
  afterAll(async () => {
    await plugin.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("declares the whole taxonomy, ratification, the write-trigger hook points and the three tools with their classes", async () => {
    const caps = (await mem().getCapabilities({})).capabilities!;
    expect(caps.supportedTypes).toEqual([
      MemoryType.USER,
      MemoryType.FEEDBACK,
      MemoryType.PROJECT,
      MemoryType.REFERENCE,
    ]);
    expect(caps.supportedScopes).toEqual([MemoryScope.SESSION, MemoryScope.PROJECT, MemoryScope.GLOBAL]);
    expect(caps.ratificationSupported).toBe(true);
    expect(caps.supportedHookPoints).toEqual([HookPoint.POST_MODEL_RESPONSE, HookPoint.SESSION_END]);
    expect(caps.defaultTokenBudget).toBe(1500n);
    const schema = Object.fromEntries((await tools().getSchema({})).tools.map((t) => [t.name, t]));
    expect(schema["remember"]).toMatchObject({
      kind: ToolKind.RESOURCE,
      risk: RiskClass.MODERATE,
      concurrency: { safe: false },
    });
    expect(schema["forget"]).toMatchObject({
      kind: ToolKind.RESOURCE,
      risk: RiskClass.MODERATE,
      concurrency: { safe: true, keyFields: ["id"] },
    });
    expect(schema["search"]).toMatchObject({
      kind: ToolKind.DATA_SOURCE,
      risk: RiskClass.READ_ONLY,
      concurrency: { safe: true, keyFields: [] },
    });
    expect((await mem().describe({})).producer).toMatchObject({
      name: "memory",
      category: PluginCategory.MEMORY,
    });
  });

  it("records with provenance and links as given, never overwrites an id (-2), and fails not_found", async () => {
    const provenance = {
      sourceSessionId: "01SESSIONA",
      sourceTurnId: "01TURN",
      recordedBy: "memory.remember",
    };
    const a = await mem().record({
      type: MemoryType.USER,
      scope: MemoryScope.GLOBAL,
      id: "user-role",
      title: "Role",
      content: block("Staff engineer; see [[team-wiki]]."),
      // The kernel parses links on its write path; the provider stores them as given.
      links: ["team-wiki"],
      provenance,
      ...ctx(),
    });
    const b = await mem().record({
      type: MemoryType.USER,
      scope: MemoryScope.GLOBAL,
      id: "user-role",
      title: "Role again",
      content: block("Also writes Go; [[not-parsed-here]]."),
      provenance,
      ...ctx(),
    });
    expect([a.result?.id, b.result?.id]).toEqual(["user-role", "user-role-2"]);
    expect(a.result?.status).toBe(RecordStatus.CANONICAL);
    const got = (await mem().getRecord({ id: "user-role", ...ctx() })).record!;
    expect(got).toMatchObject({
      type: MemoryType.USER,
      scope: MemoryScope.GLOBAL,
      links: ["team-wiki"],
      provenance,
    });
    expect(Number(got.tokens)).toBe(Math.ceil(Buffer.byteLength(text(got)) / 4));
    // SQLite keeps the links it was given; a markdown file's links are read from its text
    // (a hand edit changes them), with the kernel's parsing rules.
    expect((await mem().getRecord({ id: "user-role-2", ...ctx() })).record!.links).toEqual(
      store === "sqlite" ? [] : ["not-parsed-here"],
    );
    await mem().updateRecord({ id: "user-role-2", content: block("Writes Go and Rust."), ...ctx() });
    expect(text((await mem().getRecord({ id: "user-role-2", ...ctx() })).record!)).toBe(
      "Writes Go and Rust.",
    );
    for (const call of [
      () => mem().getRecord({ id: "nope", ...ctx() }),
      () => mem().updateRecord({ id: "nope", content: block("x"), ...ctx() }),
      () => mem().deleteRecord({ id: "nope", ...ctx() }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 5 });
    }
    // Approving a canonical record is a no-op; rejecting one is refused (only drafts are rejected).
    expect((await mem().approveRecord({ id: "user-role" })).result?.status).toBe(RecordStatus.CANONICAL);
    await expect(mem().rejectRecord({ id: "user-role" })).rejects.toMatchObject({ code: 9 });
    await mem().deleteRecord({ id: "user-role-2", ...ctx() });
    const list = await mem().listRecords({ pageSize: 1, ...ctx() });
    expect(list.records.map((r) => r.id)).toEqual(["user-role"]);
  });

  it("recalls within token_budget, never another session's session-scoped records", async () => {
    const prov = (s: string) => ({ sourceSessionId: s, recordedBy: "test" });
    await mem().record({
      type: MemoryType.PROJECT,
      scope: MemoryScope.SESSION,
      id: "mine",
      title: "Mine",
      content: block("only for session A"),
      provenance: prov("01SESSIONA"),
      ...ctx(),
    });
    await mem().record({
      type: MemoryType.PROJECT,
      scope: MemoryScope.SESSION,
      id: "theirs",
      title: "Theirs",
      content: block("only for session B"),
      provenance: prov("01SESSIONB"),
      ...ctx(),
    });
    await mem().record({
      type: MemoryType.REFERENCE,
      scope: MemoryScope.PROJECT,
      id: "big",
      title: "Big",
      content: block("runbook ".repeat(300)),
      provenance: prov("01SESSIONA"),
      ...ctx(),
    });
    const all = (await recall()).records.map((r) => r.id);
    expect(all).toContain("mine");
    expect(all).toContain("big");
    expect(all).not.toContain("theirs");
    // A sub-agent of session A sees A's session records; one of an unrelated session does not.
    const child = (await recall({ sessionId: "01CHILD", ancestorSessionIds: ["01SESSIONA"] })).records.map(
      (r) => r.id,
    );
    expect(child).toContain("mine");
    expect(child).not.toContain("theirs");
    expect((await recall({ sessionId: "01CHILD" })).records.map((r) => r.id)).not.toContain("mine");
    const small = await recall({ tokenBudget: 40n });
    const used = small.records.reduce((n, r) => n + Number(r.tokens), 0);
    expect(used).toBeLessThanOrEqual(40);
    expect(small.records.map((r) => r.id)).not.toContain("big");
    expect(small.records.length).toBeGreaterThan(0);
    for (const r of small.records) expect(r.relevanceScore).toBeGreaterThanOrEqual(0);
    for (const r of small.records) expect(r.relevanceScore).toBeLessThanOrEqual(1);
    await mem().deleteRecord({ id: "big", ...ctx() });
  });

  it("memory.remember creates, updates by id, asks about near matches, and refuses type changes", async () => {
    const created = await invoke("remember", {
      type: "project",
      title: "Deploy pipeline migration",
      content: "Moving CI to the new deploy tool.",
    });
    expect(created.result).toMatchObject({ action: "created", id: "deploy-pipeline-migration" });
    const near = await invoke("remember", {
      type: "project",
      title: "Deploy pipeline migrations",
      content: "Another take.",
    });
    expect(near.result).toMatchObject({ action: "needs_confirmation", id: "" });
    expect((near.result!["candidates"] as { id: string }[]).map((c) => c.id)).toEqual([
      "deploy-pipeline-migration",
    ]);
    const forced = await invoke("remember", {
      type: "project",
      title: "Deploy pipeline migrations",
      content: "Separate.",
      create_new: true,
    });
    expect(forced.result).toMatchObject({ action: "created", id: "deploy-pipeline-migrations" });
    const updated = await invoke("remember", {
      type: "project",
      id: "deploy-pipeline-migration",
      title: "Deploy pipeline migration",
      content: "Done: the new deploy tool is live.",
    });
    expect(updated.result).toMatchObject({ action: "updated", id: "deploy-pipeline-migration" });
    expect(text((await mem().getRecord({ id: "deploy-pipeline-migration", ...ctx() })).record!)).toBe(
      "Done: the new deploy tool is live.",
    );
    const retype = await invoke("remember", {
      type: "feedback",
      id: "deploy-pipeline-migration",
      title: "x",
      content: "y",
    });
    expect(retype.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    const rec = (await mem().getRecord({ id: "deploy-pipeline-migration", ...ctx() })).record!;
    expect(rec.provenance).toMatchObject({
      sourceSessionId: "01SESSIONA",
      sourceTurnId: "01TURN",
      recordedBy: "memory.remember",
    });
  });

  it("memory.search finds records by their words (SQLite: stemmed full-text search) and memory.forget removes them", async () => {
    const found = await invoke("search", { query: store === "sqlite" ? "deploying tools" : "deploy tool" });
    const ids = (found.result!["results"] as { id: string; relevance: number }[]).map((r) => r.id);
    expect(ids).toContain("deploy-pipeline-migration");
    expect(ids).not.toContain("user-role");
    const gone = await invoke("forget", { id: "deploy-pipeline-migrations" });
    expect(gone.result).toMatchObject({ action: "forgotten" });
    expect((await invoke("forget", { id: "deploy-pipeline-migrations" })).error?.category).toBe(
      ToolErrorCategory.NOT_FOUND,
    );
    const after = await invoke("search", { query: "separate" });
    expect(after.result!["results"]).toEqual([]);
  });

  it("refuses to store a credential, through the tool and the RPC alike, and stores nothing of it", async () => {
    const res = await invoke("remember", {
      type: "reference",
      title: "API key",
      content: `the key is ${SECRET}`,
    });
    expect(res.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect(res.error?.message).toContain("an Anthropic API key");
    expect(res.error?.message).not.toContain(SECRET);
    await expect(
      mem().record({
        type: MemoryType.REFERENCE,
        scope: MemoryScope.PROJECT,
        title: "k",
        content: block(`token ${SECRET}`),
        provenance: { sourceSessionId: "s", recordedBy: "t" },
        ...ctx(),
      }),
    ).rejects.toMatchObject({ code: 3 });
    const dump = (dir: string): string =>
      existsSync(dir)
        ? readdirSync(dir, { recursive: true, withFileTypes: true })
            .filter((e) => e.isFile())
            .map((e) => readFileSync(join(e.parentPath, e.name), "latin1"))
            .join("\n")
        : "";
    expect(dump(join(project, ".agent", "memory")) + dump(globalDir)).not.toContain(SECRET.slice(0, 20));
  });

  it("keeps global records under $XDG_DATA_HOME/agent/memory and project ones under .agent/memory", () => {
    const files = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
    if (store === "markdown") {
      expect(files(globalDir)).toContain("user-role.md");
      expect(files(join(project, ".agent", "memory"))).toContain("deploy-pipeline-migration.md");
    } else {
      expect(files(globalDir)).toContain("memory.sqlite");
      expect(files(join(project, ".agent", "memory"))).toContain("memory.sqlite");
    }
  });

  // (The SQLite store has no files to edit by hand.)
  if (store === "markdown")
    it("picks up a memory file written or edited by hand before the next recall", async () => {
      const dir = join(project, ".agent", "memory");
      writeFileSync(
        join(dir, "Team Conventions.md"),
        "# Team conventions\n\nReview every change in pairs.\n",
      );
      let rec = (await recall()).records.find((r) => r.id === "team-conventions");
      expect(rec).toMatchObject({
        type: MemoryType.PROJECT,
        scope: MemoryScope.PROJECT,
        title: "Team conventions",
      });
      expect(text(rec!)).toContain("Review every change in pairs.");
      const file = join(dir, "deploy-pipeline-migration.md");
      writeFileSync(
        file,
        readFileSync(file, "utf8").replace("Done: the new deploy tool is live.", "Rolled back on Friday."),
      );
      rec = (await recall()).records.find((r) => r.id === "deploy-pipeline-migration");
      expect(text(rec!)).toBe("Rolled back on Friday.");
      // A credential pasted into a file by hand is not read back into a prompt.
      writeFileSync(join(dir, "oops.md"), `key: ${SECRET}\n`);
      expect((await recall()).records.map((r) => r.id)).not.toContain("oops");
      rmSync(join(dir, "oops.md"));
      // forget removes a hand-named file too
      expect((await invoke("forget", { id: "team-conventions" })).result).toMatchObject({
        action: "forgotten",
      });
      expect(existsSync(join(dir, "Team Conventions.md"))).toBe(false);
    });

  it("rejects a bad configuration with diagnostics naming the attribute", async () => {
    const res = await mem().configure({ config: { store: "redis", token_budget: 2.5 } });
    expect(res.result!.diagnostics.map((d) => d.attributePath.join("."))).toEqual(["token_budget", "store"]);
    await mem().configure({ config: { store } });
  });
});

it("passes agent conform's tool-provider checks", async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "ph-mem-conform-")));
  try {
    mkdirSync(join(root, "work", ".git"), { recursive: true });
    const report = await runConformance({
      executable: MAIN,
      workingDirectory: join(root, "work"),
      env: { XDG_DATA_HOME: join(root, "data") },
      config: { store: "sqlite" },
      samples: [
        {
          tool: "remember",
          arguments: { type: "user", title: "Prefers tabs", content: "Indent with tabs." },
          expect: "result",
        },
        { tool: "search", arguments: { query: "tabs" }, expect: "result" },
        { tool: "forget", arguments: { id: "prefers-tabs" }, expect: "result" },
        { tool: "forget", arguments: { id: "prefers-tabs" }, expect: "not_found" },
      ],
    });
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    expect(report.exitCode).toBe(0);
    expect(report.categories).toEqual(expect.arrayContaining(["memory", "tool"]));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
