// The framing between the kernel and a sandbox host (runtime/src/sandbox-host-wire.ts): a
// message split over any chunks arrives whole and unchanged, typed arrays included; bytes
// that are no message, and a length no host would send, throw (the kernel then kills the
// host) instead of being buffered or half-read.
import { describe, expect, it } from "vitest";
import { encodeMessage, MessageReader } from "../src/sandbox-host-wire.ts";

describe("the sandbox host's wire", () => {
  it("reassembles messages split across chunks, bytes unchanged", () => {
    const sent = [
      ["frame", 1, [0, 7, "/pkg.Service/Call", new Uint8Array([1, 2, 3]), undefined, 500]],
      ["out", 2, 1, new Uint8Array(70_000).fill(9)],
      ["exit", 2, 0],
    ];
    const bytes = Buffer.concat(sent.map(encodeMessage));
    const got: unknown[] = [];
    const reader = new MessageReader();
    for (let at = 0; at < bytes.length; at += 1_000)
      reader.push(bytes.subarray(at, at + 1_000), (m) => got.push(m));
    expect(got).toEqual(sent);
  });

  it("throws on bytes that are no message and on a length no host sends", () => {
    expect(() =>
      new MessageReader().push(Buffer.from([0, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef]), () => {}),
    ).toThrow();
    expect(() => new MessageReader().push(Buffer.from([0xff, 0xff, 0xff, 0xff]), () => {})).toThrow(
      /a message of 4294967295 bytes/,
    );
  });
});
