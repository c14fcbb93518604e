// A reader of a file that lost a table carries on without it and says what is missing.
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createSession, openSessionReader } from "../src/index.ts";
import { payloadFor, scratchDir, toolProducer } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir("state-damaged-"));
});
afterEach(() => cleanup());

it("rebuilds the producer manifest from events and reads no ledger when those tables are gone", () => {
  const w = createSession({ profile: "p", depth: 0 }, { dir });
  for (let i = 0; i < 3; i++)
    w.append({ kind: 2 as never, producer: toolProducer, schemaVersion: "1", payload: payloadFor(i) });
  const { sessionId: id, path } = w;
  w.close();
  const db = new DatabaseSync(path, { enableForeignKeyConstraints: false });
  db.exec("DROP TABLE producers; DROP TABLE cost_ledger; DROP TABLE plan_items;");
  db.close();
  const r = openSessionReader(id, { dir });
  expect(r.producers().map((p) => [p.name, p.version, p.firstSeenSequence])).toEqual([["fs", "1.2.0", 1]]);
  expect(r.costLedger()).toEqual([]);
  expect(r.planItems()).toEqual([]);
  expect(r.info().costUsd).toBe(0);
  expect(r.readEvents()).toHaveLength(3);
  expect(r.checkTables().sort()).toEqual([
    "the cost_ledger table is missing",
    "the plan_items table is missing",
    "the producers table is missing",
  ]);
  r.close();
});
