// End-to-end: a long streamed answer through the real binary (anthropic worker → kernel →
// stream-json printer). Every byte arrives in order; deltas the vendor sent faster than
// they were parsed travel merged, yet the first token is printed on its own rather than
// held until a large merged delta fills up.
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const DELTAS = 20_000;
let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("streaming a long answer headless", () => {
  it("prints every delta in order, merged into far fewer records, the first token alone", async () => {
    const answer = scenarios.longStream(DELTAS);
    fake.push(answer);
    const repo = sb.repo();
    const r = await agent(["run", "-p", "Write a very long answer.", "--output-format", "stream-json"], {
      cwd: repo,
      env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const deltas = records(r.stdout).filter((rec) => rec["type"] === "delta");
    expect(deltas.map((d) => d["text"]).join("")).toBe(answer.deltas!.join(""));
    // Before, the first record carried every delta parsed up to the 64 KiB merge limit.
    expect(deltas[0]!["text"]).toBe("tok0 ");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.length).toBeLessThan(DELTAS / 10);
  });
});
