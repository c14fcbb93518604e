// The files a session's calls named (ContextRequest.files_touched) are taken in every turn;
// each turn reads only the messages added since the last (issue 32, point 5: no
// whole-history pass per request), with the same list a full reading gives.
import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { expect, it } from "vitest";
import { FilesTouched } from "../../src/loop/turn/files-touched.ts";

/** A message whose content reads are counted. */
function counted(m: Message, reads: { n: number }): Message {
  return new Proxy(m, {
    get(target, prop, receiver) {
      if (prop === "content") reads.n++;
      return Reflect.get(target, prop, receiver);
    },
  });
}

function step(i: number, path: string, isError = false): Message[] {
  const id = `t${i}`;
  return [
    create(MessageSchema, {
      role: Role.ASSISTANT,
      content: [{ block: { case: "toolUse", value: { id, name: "fs__write_file", input: { path } } } }],
    }),
    create(MessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "toolResult", value: { toolUseId: id, isError } } }],
    }),
  ];
}

it("reads each message once over a session, and lists what a full reading lists", () => {
  const reads = { n: 0 };
  const history: Message[] = [];
  const seen = new FilesTouched();
  for (let i = 0; i < 40; i++) {
    for (const m of step(i, `src/f${i % 7}.ts`, i === 5)) history.push(counted(m, reads));
    seen.observe(history, "/w");
  }
  // 80 messages, 40 turns: a pass over the whole history per turn reads thousands.
  expect(reads.n).toBeLessThanOrEqual(history.length);
  const full = new FilesTouched();
  full.observe(history, "/w");
  expect(seen.list()).toEqual(full.list());
  expect(seen.list()).toEqual([
    "src/f5.ts",
    "src/f6.ts",
    "src/f0.ts",
    "src/f1.ts",
    "src/f2.ts",
    "src/f3.ts",
    "src/f4.ts",
  ]);

  // A rewritten history (compaction) is read again; calls counted before stay counted once.
  const compacted = history.slice(60);
  seen.observe(compacted, "/w");
  expect(seen.list()).toEqual(full.list());
  const more = [...compacted, ...step(99, "new.ts")];
  seen.observe(more, "/w");
  expect(seen.list().at(-1)).toBe("new.ts");
});
