// Kernel ids (ULIDs) draw their randomness in blocks: ulid asks for one random byte per
// character, and a getRandomValues call per byte showed in the per-step CPU profile
// (issue 32, point 5).
import { expect, it } from "vitest";
import { ulidGenerator } from "../../src/domain/ids.ts";

type WebCrypto = typeof globalThis.crypto;

it("makes distinct, well-formed, time-ordered ids with one random draw per 4 KiB", () => {
  let now = 1_700_000_000_000;
  const next = ulidGenerator(() => now++);
  // Counted at the prototype, where ulid's own source and ours both reach it.
  const proto = Object.getPrototypeOf(globalThis.crypto) as WebCrypto;
  const original = proto.getRandomValues;
  let draws = 0;
  proto.getRandomValues = function (this: WebCrypto, array) {
    draws++;
    return original.call(this, array);
  } as WebCrypto["getRandomValues"];
  let ids: string[];
  try {
    ids = Array.from({ length: 200 }, () => next());
  } finally {
    proto.getRandomValues = original;
  }
  // 200 ids of 16 random characters each, a new millisecond each time: 3,200 bytes.
  expect(draws).toBeLessThanOrEqual(1);
  expect(new Set(ids).size).toBe(200);
  for (const id of ids) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  expect([...ids].sort()).toEqual(ids);
});
