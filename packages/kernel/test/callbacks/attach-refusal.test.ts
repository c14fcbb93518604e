// Who may attach to sessions over a plugin's kernel connection (docs/security/sockets.md):
// a frontend and nothing else. What a plugin serves is its own claim, so one that also acts
// for the model (tools, a vendor, context, memory) is refused even though it says it is a
// frontend; the end-to-end case is packages/kernel/test/plugins/sockets.test.ts.
import type { ProducerRef } from "@pluggableharness/protocol/common";
import type { CallbackPeer } from "@pluggableharness/runtime";
import { describe, expect, it } from "vitest";
import { attachRefusal, frontendsOnly } from "../../src/frontends/attach.ts";

const peer = (...categories: string[]): CallbackPeer => ({
  plugin: "p",
  instance: 1,
  pid: 1,
  producers: new Map(categories.map((c) => [c, {} as ProducerRef])),
});

describe("attachRefusal", () => {
  it("lets a frontend attach, with widgets or hooks beside it", () => {
    expect(attachRefusal(peer("frontend"))).toBeUndefined();
    expect(attachRefusal(peer("frontend", "widget", "hook"))).toBeUndefined();
  });

  it("refuses a plugin that is no frontend, or has not been described yet", () => {
    expect(attachRefusal(peer())).toBe('plugin "p" is not a frontend; only frontends attach to sessions');
    expect(attachRefusal(peer("tool"))).toMatch(/is not a frontend/);
  });

  it("refuses a frontend that also acts for the model", () => {
    for (const c of ["tool", "model", "context", "memory"]) {
      expect(attachRefusal(peer("frontend", c))).toBe(
        `plugin "p" serves ${c} too; a frontend that attaches to sessions may not`,
      );
    }
  });

  it("answers a refused call PERMISSION_DENIED without calling the handler", () => {
    let handled = false;
    const errors: unknown[] = [];
    const call = { emit: (_event: string, err: unknown) => errors.push(err) };
    frontendsOnly(peer("frontend", "tool"), () => {
      handled = true;
    })(call as never);
    expect(handled).toBe(false);
    expect(errors).toEqual([
      { code: 7, details: 'plugin "p" serves tool too; a frontend that attaches to sessions may not' },
    ]);
    frontendsOnly(peer("frontend"), () => {
      handled = true;
    })(call as never);
    expect(handled).toBe(true);
  });
});
