// The kernel's memory-secrets rule (loop/gate/memory-secrets.ts): a call to a memory
// provider's tool whose arguments carry a secret's value anywhere in their JSON is caught;
// other providers' calls, and every call when no secret is known, are not. Encoded copies
// of a secret count as the secret. The refusal
// through a real session is packages/cli/test/e2e-memory.test.ts.
import type { JsonObject } from "@bufbuild/protobuf";
import { SecretMask } from "@pluggableharness/config";
import { describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/loop/gate/call.ts";
import { memorySecretHit } from "../../src/loop/gate/memory-secrets.ts";

const SECRET = "sk-canary-4f1e9a";

function call(categories: string[], args: JsonObject): CallRecord {
  return {
    index: 0,
    block: {} as CallRecord["block"],
    tool: { provider: { categories: new Set(categories) } } as unknown as CallRecord["tool"],
    args,
    resultPersisted: false,
    hookable: true,
  };
}

const deps = (secretValues: string[]) => ({ secretMask: new SecretMask(secretValues) });

describe("the memory-secrets rule", () => {
  it("catches a secret's value in a string, inside text, in arrays and nested objects", () => {
    const memory = ["tool", "memory"];
    expect(memorySecretHit(deps([SECRET]), call(memory, { content: SECRET }))).toBe(true);
    expect(memorySecretHit(deps([SECRET]), call(memory, { content: `key is ${SECRET}.` }))).toBe(true);
    expect(memorySecretHit(deps(["other", SECRET]), call(memory, { tags: ["a", `x${SECRET}`] }))).toBe(true);
    expect(memorySecretHit(deps([SECRET]), call(memory, { meta: { deep: [{ v: SECRET }] } }))).toBe(true);
  });

  it("catches it encoded too: base64 (at any offset), hex, percent-encoded, reversed", () => {
    const memory = ["tool", "memory"];
    const hit = (content: string) => memorySecretHit(deps([SECRET]), call(memory, { content }));
    expect(hit(Buffer.from(`note: ${SECRET}`).toString("base64"))).toBe(true);
    expect(hit(Buffer.from(`note:: ${SECRET}`).toString("base64url"))).toBe(true);
    expect(hit(Buffer.from(SECRET).toString("hex").toUpperCase())).toBe(true);
    expect(hit(encodeURIComponent(`k=${SECRET}`))).toBe(true);
    expect(hit([...SECRET].reverse().join(""))).toBe(true);
    expect(memorySecretHit(deps([SECRET]), call(memory, { [SECRET]: "as a key" }))).toBe(true);
  });

  it("lets through what holds no secret, and numbers, booleans and nulls", () => {
    const memory = ["tool", "memory"];
    expect(memorySecretHit(deps([SECRET]), call(memory, { content: "sk-canary" }))).toBe(false);
    expect(memorySecretHit(deps([SECRET]), call(memory, { n: 1, b: true, z: null, a: [], o: {} }))).toBe(
      false,
    );
    expect(memorySecretHit(deps(["1"]), call(memory, { n: 1 }))).toBe(false);
  });

  it("applies only to memory providers' tools, and only when secrets are known", () => {
    expect(memorySecretHit(deps([SECRET]), call(["tool"], { content: SECRET }))).toBe(false);
    expect(memorySecretHit(deps([]), call(["tool", "memory"], { content: SECRET }))).toBe(false);
    const noTool = { ...call(["memory"], { content: SECRET }), tool: undefined };
    expect(memorySecretHit(deps([SECRET]), noTool)).toBe(false);
  });
});
