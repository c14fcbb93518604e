// The rewind operations of ControlSession against a real session file and real file
// checkpoints: refused to anything but the operator's own direct call (a model's call of
// the same tool included), planning changes nothing, applying needs the digest of the plan
// that was shown and refuses (with the new plan) when the plan changed since, and a done
// rewind forks the session, restores the file and marks the session for its frontends.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import {
  ControlSessionRequestSchema,
  ControlSessionResponseSchema,
  EventKind,
} from "@pluggableharness/protocol/kernel";
import {
  CheckpointStore,
  checkpointsDir,
  createSession,
  kernelProducer,
  openSessionReader,
  type SessionWriter,
} from "@pluggableharness/state";
import { afterEach, describe, expect, it } from "vitest";
import { type ControlDeps, controlSession } from "../../src/callbacks/control.ts";
import { InvocationTracker } from "../../src/callbacks/invocations.ts";
import { PendingRewind } from "../../src/loop/session/direct-invoke.ts";
import type { Session } from "../../src/loop/session/session.ts";

const PEER = { plugin: "commands", instance: "1", producers: new Map() } as never;
const dirs: string[] = [];
const writers: SessionWriter[] = [];

afterEach(() => {
  for (const w of writers.splice(0)) w.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function prompt(writer: SessionWriter, id: string, text: string): number {
  const payload = toBinary(
    MessageEventSchema,
    create(MessageEventSchema, {
      turnId: `T${id}`,
      message: { id, role: Role.USER, content: [{ block: { case: "text", value: { text } } }] },
    }),
  );
  return writer.append({
    kind: EventKind.MESSAGE,
    producer: kernelProducer("0.1.0"),
    schemaVersion: "1",
    payload,
  }).sequence;
}

/** A session of two prompts; the turn after each writes a.txt ("one", then "two"). */
function fixture() {
  const state = mkdtempSync(join(tmpdir(), "rewind-state-"));
  const root = mkdtempSync(join(tmpdir(), "rewind-root-"));
  dirs.push(state, root);
  const writer = createSession(
    { profile: "default", depth: 0, workingDirectory: root },
    { dir: state, durability: "normal" },
  );
  writers.push(writer);
  const store = new CheckpointStore(checkpointsDir(writer.path), root);
  const turn = (id: string, text: string, content: string) => {
    prompt(writer, id, text);
    store.scan();
    writeFileSync(join(root, "a.txt"), content);
    store.record(writer.lastSequence(), `T${id}`, store.scan());
  };
  turn("M1", "first: write a", "one\n");
  turn("M2", "second: change a", "two\n");
  const session = {
    id: writer.sessionId,
    parentId: undefined,
    writer,
    workingDirectory: root,
    log: { commit() {} },
    rewind: new PendingRewind(),
  } as unknown as Session;
  const tracker = new InvocationTracker();
  const deps: ControlDeps = {
    session: (id) => (id === session.id ? session : undefined),
    tracker,
    providers: () => undefined,
    rootPolicy: () => undefined,
    projectDir: root,
    listSessions: () => [],
    durability: "normal",
  };
  type Operation = MessageInitShape<typeof ControlSessionRequestSchema>["operation"];
  const call = async (operation: Operation) =>
    create(
      ControlSessionResponseSchema,
      await controlSession(
        deps,
        PEER,
        create(ControlSessionRequestSchema, { sessionId: session.id, operation }),
      ),
    );
  const operator = () => {
    const endOperator = tracker.beginOperator("commands", session.id);
    const endTool = tracker.begin("commands", session.id, "tool");
    return () => {
      endTool();
      endOperator();
    };
  };
  const sessions = () => readdirSync(state).filter((f) => f.endsWith(".sqlite"));
  return { state, root, session, tracker, call, operator, sessions };
}

describe("ControlSession rewind", () => {
  it("is refused to a model's call of the tool and to a plugin serving no operator call", async () => {
    const { root, tracker, call, session, sessions } = fixture();
    const ops: MessageInitShape<typeof ControlSessionRequestSchema>["operation"][] = [
      { case: "listRewindAnchors", value: {} },
      { case: "planRewind", value: { to: "1" } },
      { case: "applyRewind", value: { to: "1", digest: "x" } },
    ];
    for (const op of ops) await expect(call(op)).rejects.toMatchObject({ code: 7 });
    // A model's call: the provider serves a tool call for the session, but not the operator's.
    const endModelCall = tracker.begin("commands", session.id, "tool");
    for (const op of ops) await expect(call(op)).rejects.toMatchObject({ code: 7 });
    endModelCall();
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("two\n");
    expect(sessions()).toHaveLength(1);
    expect(session.rewind.current).toBeUndefined();
  });

  it("lists the prompts, plans without changing anything, and applies only the plan shown", async () => {
    const { root, call, operator, session, sessions, state } = fixture();
    const end = operator();
    const listed = await call({ case: "listRewindAnchors", value: {} });
    expect(listed.result).toMatchObject({
      case: "rewindAnchors",
      value: {
        anchors: [
          { number: 1, messageId: "M1", text: "first: write a" },
          { number: 2, messageId: "M2", text: "second: change a" },
        ],
      },
    });
    const planned = await call({ case: "planRewind", value: { to: "2" } });
    if (planned.result.case !== "rewindPlan") throw new Error("no plan");
    const plan = planned.result.value;
    expect(plan.files).toEqual([
      expect.objectContaining({ path: "a.txt", action: "restore", changedSince: false }),
    ]);
    expect(plan.lines.join("\n")).toContain("~ a.txt: restore");
    expect(plan.digest).toMatch(/^[0-9a-f]{16}$/);
    // Planning (and a plan for an unknown prompt) changes nothing.
    await expect(call({ case: "planRewind", value: { to: "7" } })).rejects.toMatchObject({ code: 5 });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("two\n");
    expect(sessions()).toHaveLength(1);

    // Without a digest, or with one that is not the plan's: nothing happens.
    await expect(call({ case: "applyRewind", value: { to: "2", digest: "" } })).rejects.toMatchObject({
      code: 3,
    });
    const wrong = await call({ case: "applyRewind", value: { to: "2", digest: "0000000000000000" } });
    expect(wrong.result).toMatchObject({
      case: "rewound",
      value: { stale: { digest: plan.digest } },
    });
    // The file changed after the plan was shown: the shown plan is not carried out.
    writeFileSync(join(root, "a.txt"), "edited by hand\n");
    const moved = await call({ case: "applyRewind", value: { to: "2", digest: plan.digest } });
    if (moved.result.case !== "rewound") throw new Error("no result");
    expect(moved.result.value.forkSessionId).toBe("");
    expect(moved.result.value.stale?.files[0]).toMatchObject({ path: "a.txt", changedSince: true });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("edited by hand\n");
    expect(sessions()).toHaveLength(1);
    expect(session.rewind.current).toBeUndefined();

    // The plan as it is now, confirmed: forked and restored.
    const done = await call({
      case: "applyRewind",
      value: { to: "M2", digest: moved.result.value.stale!.digest },
    });
    end();
    if (done.result.case !== "rewound") throw new Error("no result");
    const fork = done.result.value.forkSessionId;
    expect(fork).toMatch(/^[0-9A-Z]{26}$/);
    expect(done.result.value.changed).toEqual(["a.txt"]);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("one\n");
    expect(sessions()).toHaveLength(2);
    expect(session.rewind.current).toEqual({
      forkId: fork,
      promptText: "second: change a",
      anchorMessageId: "M2",
    });
    // The fork holds what came before the second prompt, and its checkpoints up to there.
    const reader = openSessionReader(fork, { dir: state, log: () => {} });
    try {
      expect(reader.readEvents()).toHaveLength(1);
    } finally {
      reader.close();
    }
    expect(existsSync(join(checkpointsDir(join(state, `${fork}.sqlite`)), "checkpoints.jsonl"))).toBe(true);
  });
});
