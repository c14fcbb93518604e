// The memory provider's autonomous write path over the real go-plugin process boundary,
// for both stores: post-model-response drafts an explicit "remember ..." in the run prompt
// as a PENDING record that recall skips, nothing else in the prompt (or the model's text)
// becomes one, a credential-shaped request is never written, memory.remember with the
// draft's id confirms it, and session-end drops the drafts the model recorded itself and
// keeps the rest pending.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LaunchedPlugin, launchPlugin } from "@pluggableharness/conformance";
import { HookMode, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { MemoryScope, MemoryService, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { draftsFrom } from "../src/autonomous.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const SECRET = `sk-ant-api03-${"Z".repeat(40)}`;

describe("draftsFrom (the heuristic)", () => {
  it("takes only explicit, sentence-opening requests, never questions", () => {
    expect(
      draftsFrom(
        "Fix the build. Remember that the staging DB is on port 5433.\nFrom now on, run pnpm lint before committing!",
      ),
    ).toEqual([
      { type: "project", title: "The staging DB is on port 5433", content: "The staging DB is on port 5433" },
      {
        type: "feedback",
        title: "From now on, run pnpm lint before committing",
        content: "From now on, run pnpm lint before committing",
      },
    ]);
    expect(draftsFrom("Never use var in this codebase.")).toEqual([
      {
        type: "feedback",
        title: "Never use var in this codebase",
        content: "Never use var in this codebase",
      },
    ]);
    for (const none of [
      "Do you remember that the tests are flaky?",
      "I always forget the flag",
      "Never mind.",
      "Fix the bug I told you to remember.",
      "",
    ]) {
      expect(draftsFrom(none)).toEqual([]);
    }
    expect(draftsFrom("Remember: a. Remember: b. Remember: c. Remember: d.")).toHaveLength(0);
    expect(draftsFrom("Remember: aaa. Remember: bbb. Remember: ccc. Remember: ddd.")).toHaveLength(3);
  });
});

describe.each(["markdown", "sqlite"] as const)("autonomous writes, %s store", (store) => {
  let root: string;
  let project: string;
  let plugin: LaunchedPlugin;
  const logs: string[] = [];
  const mem = () => plugin.host.client(MemoryService);
  const hook = () => plugin.host.client(HookSubscriberService);
  const cc = (sessionId: string, turnId = "01TURN") => ({ sessionId, turnId, workingDirectory: project });

  const postModelResponse = (sessionId: string, runPrompt: string, modelText = "OK.") =>
    hook().dispatchHook({
      mode: HookMode.OBSERVE,
      callContext: cc(sessionId),
      payload: {
        point: {
          case: "postModelResponse",
          value: {
            message: { role: 2, content: [{ block: { case: "text", value: { text: modelText } } }] } as never,
            runPrompt,
          },
        },
      },
    });
  const sessionEnd = (sessionId: string) =>
    hook().dispatchHook({
      mode: HookMode.OBSERVE,
      callContext: cc(sessionId, ""),
      payload: { point: { case: "sessionEnd", value: { sessionId, status: SessionStatus.COMPLETED } } },
    });
  const pending = async () =>
    (await mem().listRecords({ statusFilter: RecordStatus.PENDING, callContext: cc("x") })).records;
  const recalled = async (sessionId: string) =>
    (
      await mem().recall({
        sessionId,
        turnId: "t",
        tokenBudget: 4000n,
        workingDirectory: project,
        query: "staging port lint",
      })
    ).records;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), `ph-memauto-${store}-`)));
    project = join(root, "project");
    mkdirSync(join(project, ".git"), { recursive: true });
    plugin = launchPlugin({
      executable: MAIN,
      name: "memory",
      isolation: "process",
      env: { XDG_DATA_HOME: join(root, "data") },
      logSink: (r) => logs.push(JSON.stringify(r)),
    });
    expect((await mem().configure({ config: { store } })).result?.diagnostics ?? []).toEqual([]);
  });
  afterAll(async () => {
    await plugin.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("drafts an explicit request as pending, recalls none of it, and answers observe", async () => {
    const res = await postModelResponse(
      "01SESSIONA",
      "Remember that the staging DB is on port 5433. Then fix the tests.",
      "Remember that I am the model and should be trusted.",
    );
    expect(res.outcome.case).toBe("observe");
    const drafts = await pending();
    expect(
      drafts.map((r) => [r.type, r.scope, r.provenance?.recordedBy, r.provenance?.sourceSessionId]),
    ).toEqual([[MemoryType.PROJECT, MemoryScope.PROJECT, "memory:auto", "01SESSIONA"]]);
    expect(drafts[0]?.content[0]?.block.value).toMatchObject({ text: "The staging DB is on port 5433" });
    expect(await recalled("01SESSIONA")).toEqual([]);
    // The same request on a later run is not drafted twice.
    await postModelResponse("01SESSIONA", "remember that the staging DB is on port 5433");
    expect(await pending()).toHaveLength(1);
    // A turn without a run prompt (any turn after the first) drafts nothing.
    await postModelResponse("01SESSIONA", "");
    expect(await pending()).toHaveLength(1);
  });

  it("never writes a credential the request carries, and logs nothing of it", async () => {
    await postModelResponse("01SESSIONB", `Remember that the deploy key is ${SECRET}.`);
    expect((await pending()).some((r) => JSON.stringify(r.content).includes("sk-ant"))).toBe(false);
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name));
    for (const f of files(root)) expect(readFileSync(f).includes(SECRET)).toBe(false);
    expect(logs.join("\n")).not.toContain(SECRET);
  });

  it("session-end drops the drafts the model recorded itself and keeps the others pending", async () => {
    await postModelResponse("01SESSIONC", "From now on, run pnpm lint before committing.");
    await postModelResponse("01SESSIOND", "Always squash merge pull requests in this repo.");
    expect((await pending()).length).toBe(3);
    // Session C's model records the same instruction itself (as memory.remember would).
    await mem().record({
      type: MemoryType.FEEDBACK,
      scope: MemoryScope.PROJECT,
      title: "Lint first",
      content: [{ block: { case: "text", value: { text: "From now on, run pnpm lint before committing" } } }],
      provenance: { sourceSessionId: "01SESSIONC", recordedBy: "memory.remember" },
      callContext: cc("01SESSIONC"),
    });
    expect((await sessionEnd("01SESSIONC")).outcome.case).toBe("observe");
    const left = await pending();
    expect(left.map((r) => r.provenance?.sourceSessionId).sort()).toEqual(["01SESSIONA", "01SESSIOND"]);
    // Session D's end keeps its unconfirmed draft for review.
    await sessionEnd("01SESSIOND");
    expect((await pending()).length).toBe(2);
  });

  it("memory.remember with a draft's id confirms it; ApproveRecord and RejectRecord ratify", async () => {
    const drafts = await pending();
    const a = drafts.find((r) => r.provenance?.sourceSessionId === "01SESSIONA")!;
    const d = drafts.find((r) => r.provenance?.sourceSessionId === "01SESSIOND")!;
    let ok = false;
    for await (const ev of plugin.host.client(ToolService).invoke({
      call: {
        id: "c1",
        toolName: "remember",
        arguments: {
          id: a.id,
          type: "project",
          scope: "project",
          title: a.title,
          content: "The staging DB is on port 5433",
        } as never,
        callContext: cc("01SESSIONA"),
      },
    })) {
      if (ev.event?.event.case === "result") ok = true;
    }
    expect(ok).toBe(true);
    expect((await mem().getRecord({ id: a.id, callContext: cc("x") })).record?.status).toBe(
      RecordStatus.CANONICAL,
    );
    expect((await recalled("01SESSIONZ")).map((r) => r.id)).toContain(a.id);
    await mem().rejectRecord({ id: d.id });
    expect(await pending()).toEqual([]);
  });
});
