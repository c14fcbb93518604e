// A summary request that cannot fit the model's window is never sent (issue 34, point 7):
// the kernel refuses it before any model call, counting it as it counts the session's own
// requests (calibrated by what the vendor reported), and falls back to dropping the oldest
// turns, so the session goes on.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { CompactionEventSchema } from "@pluggableharness/protocol/event";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { Harness, reply } from "./harness.ts";

const COMPACTOR = fileURLToPath(new URL("../../../../providers/compactor", import.meta.url));

const h = new Harness();
afterAll(() => h.dispose());

const HCL = `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
}
settings {
  sandbox = "off"
  compaction {
    context_window = 2000
    threshold      = "95%"
  }
}`;

describe("a summary request larger than the window", () => {
  it("is refused unsent, and the kernel drops the oldest turns instead", async () => {
    const k = await h.kernel({
      providers: [
        {
          name: "compactor",
          fixture: "installed",
          firstParty: "compactor",
          attrs: { keep_recent_tokens: "1" },
        },
      ],
      install: { compactor: COMPACTOR },
      hcl: HCL,
      headlessAsk: "allow",
    });
    // The vendor counts far more than the kernel's estimate (code, non-Latin text): the
    // kernel's calibration scales its estimates up to match, the summary request's too.
    k.script("big", {
      turns: ["one", "two", "three", "four"].map((t) => reply(t, [5000, 5])),
    });
    k.script("default", { turns: [reply("a summary")] });
    const words = "a fairly long prompt that fills the small window quickly. ".repeat(10);
    const s = await k.kernel.startSession({ prompt: `[big] ${words}` });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    for (let i = 0; i < 3; i++) {
      s.send(`[big] ${words}`);
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    }
    // The summary call never reached the model: the scripted "default" scenario got nothing.
    expect(existsSync(join(k.scriptDir, "default.requests.jsonl"))).toBe(false);
    // The kernel fell back to dropping the oldest turns, and the turn went on.
    const f = k.file(s.id);
    const compactions = f.events
      .filter((e) => e.kindText === "compaction")
      .map((e) => fromBinary(CompactionEventSchema, e.payload));
    expect(compactions.map((c) => c.compactor)).toEqual(["kernel (oldest turns dropped)"]);
    expect(k.requests("big")).toHaveLength(4);
    expect(JSON.stringify(k.requests("big")[3]!.request)).toContain(
      "oldest messages of this conversation were dropped",
    );
    await k.close();
  }, 60_000);
});
