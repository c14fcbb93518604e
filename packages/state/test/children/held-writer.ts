// Two-process test child: the session's writer, driven line by line over stdin.
// Commands (each answered on stdout):
//   burst <n>  append n events, one transaction each  -> "burst-done <last sequence>"
//   hold <n>   inside ONE transaction append n events, print "holding", then block
//              (synchronously) until the line "release" arrives, and commit
//                                                    -> "committed <last sequence>"
//   exit       close the writer and exit 0
// The writer runs with busy_timeout 0: if a reader ever made it wait, the command
// fails at once and the child prints "error ..." and exits 1.
//
// argv: <sessions dir> <session id>

import { readSync, writeSync } from "node:fs";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import { openSessionWriter } from "../../src/index.ts";
import { payloadFor, toolProducer } from "../helpers.ts";

const TOOL_CALL = 2 as EventKind;
const [dir, sessionId] = process.argv.slice(2);
if (dir === undefined || sessionId === undefined) throw new Error("usage: held-writer <dir> <session id>");

let pending = "";
const chunk = Buffer.alloc(4096);
function readLine(): string | undefined {
  for (;;) {
    const newline = pending.indexOf("\n");
    if (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      return line;
    }
    const n = readSync(0, chunk, 0, chunk.length, null);
    if (n === 0) return undefined;
    pending += chunk.toString("utf8", 0, n);
  }
}
const say = (line: string) => writeSync(1, `${line}\n`);

const writer = openSessionWriter(sessionId, { dir, busyTimeoutMs: 0 });
let next = writer.lastSequence();
const event = () => ({
  kind: TOOL_CALL,
  producer: toolProducer,
  schemaVersion: "1",
  payload: payloadFor(next++),
});
say("ready");
try {
  for (let line = readLine(); line !== undefined && line !== "exit"; line = readLine()) {
    const [command, arg] = line.split(" ");
    const n = Number(arg);
    if (command === "burst") {
      let last = 0;
      for (let i = 0; i < n; i++) last = writer.append(event()).sequence;
      say(`burst-done ${last}`);
    } else if (command === "hold") {
      const last = writer.transaction(() => {
        let seq = 0;
        for (let i = 0; i < n; i++) seq = writer.append(event()).sequence;
        say("holding");
        if (readLine() !== "release") throw new Error("expected release");
        return seq;
      });
      say(`committed ${last}`);
    } else {
      throw new Error(`unknown command ${line}`);
    }
  }
  writer.close();
} catch (err) {
  say(`error ${(err as Error).message}`);
  process.exit(1);
}
