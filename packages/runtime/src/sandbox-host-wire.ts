// The sandbox host's wire: the program the host process runs, and the framing of the
// messages it exchanges with the kernel (sandbox-host.ts holds the kernel's side).
import { deserialize, serialize } from "node:v8";

// The host's program, run with `node -e` so that no file of ours has to be visible inside
// the sandbox beyond the plugins' own entry modules. Built-ins only. It speaks to the kernel
// over a socket pair on fd 3: each message a 4-byte big-endian length and the message in
// v8 serialization (so port-rpc frames, typed arrays included, cross unchanged). Messages are arrays:
// kernel → host ["start", id, spec] | ["frame", id, value] | ["terminate", id] | ["heap", id, n];
// host → kernel ["frame", id, value] | ["out", id, 1|2, bytes] | ["error", id, info] |
// ["exit", id, code] | ["heap", id, n, stats|null].
export const HOST_PROGRAM = `
"use strict";
const { Worker, MessageChannel } = require("node:worker_threads");
const { Socket } = require("node:net");
const v8 = require("node:v8");
const threads = new Map();
const channel = new Socket({ fd: 3, readable: true, writable: true });
const send = (m) => {
  if (channel.destroyed) return;
  const body = v8.serialize(m);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length);
  channel.write(Buffer.concat([head, body]));
};
let pending = Buffer.alloc(0);
channel.on("data", (chunk) => {
  pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const size = pending.readUInt32BE(0);
    if (pending.length < 4 + size) break;
    const m = v8.deserialize(pending.subarray(4, 4 + size));
    pending = pending.subarray(4 + size);
    receive(m);
  }
});
// The kernel went away: so does everything here.
channel.on("close", () => process.exit(0));
channel.on("error", () => process.exit(0));
function receive(m) {

  const id = m[1];
  switch (m[0]) {
    case "start": {
      const s = m[2];
      const { port1, port2 } = new MessageChannel();
      let w;
      try {
        const boot = { protocol: s.protocol, port: port2, channel: "port" };
        if (s.cwd) boot.cwd = s.cwd;
        const data = { entry: s.entry, [s.key]: boot };
        if (s.compileCache) data.compileCache = s.compileCache;
        w = new Worker(s.bootstrap, {
          eval: true, name: s.name, workerData: data, transferList: [port2], env: s.env,
          argv: s.args, stdout: true, stderr: true, resourceLimits: s.resourceLimits,
        });
      } catch (e) {
        send(["error", id, { name: e.name, message: e.message, stack: e.stack, code: e.code }]);
        send(["exit", id, 1]);
        return;
      }
      threads.set(id, { w, port: port1 });
      port1.on("message", (v) => send(["frame", id, v]));
      w.stdout.on("data", (d) => send(["out", id, 1, d]));
      w.stderr.on("data", (d) => send(["out", id, 2, d]));
      w.on("error", (e) => send(["error", id, { name: e.name, message: e.message, stack: e.stack, code: e.code }]));
      w.on("exit", (code) => {
        threads.delete(id);
        port1.close();
        // After the thread's last output, which its streams deliver first.
        setImmediate(() => send(["exit", id, code]));
      });
      break;
    }
    case "frame": { const t = threads.get(id); if (t) t.port.postMessage(m[2]); break; }
    case "terminate": { const t = threads.get(id); if (t) void t.w.terminate(); break; }
    case "heap": {
      const t = threads.get(id);
      if (!t) { send(["heap", id, m[2], null]); break; }
      t.w.getHeapStatistics().then((s) => send(["heap", id, m[2], { used_heap_size: s.used_heap_size }]),
        () => send(["heap", id, m[2], null]));
      break;
    }
  }
}
`;

/** The largest message a host may send; anything larger is a host gone wrong. */
const MAX_MESSAGE_BYTES = 512 * 1024 * 1024;

/** One message as the host program reads it: length, then v8 serialization. */
export function encodeMessage(message: unknown): Buffer {
  const body = serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/** Splits the host's byte stream into messages; throws on anything malformed. */
export class MessageReader {
  #pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, each: (message: unknown) => void): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (this.#pending.length >= 4) {
      const size = this.#pending.readUInt32BE(0);
      if (size > MAX_MESSAGE_BYTES) throw new Error(`a message of ${size} bytes`);
      if (this.#pending.length < 4 + size) return;
      const body = this.#pending.subarray(4, 4 + size);
      this.#pending = this.#pending.subarray(4 + size);
      each(deserialize(body));
    }
  }
}
