// Keyboard focus over the actions on screen: the panel's first, then the transcript's
// newest; moving wraps; focus follows its action when the lists change, and leaves
// when the action is gone (a task marked done loses its button).
import { create } from "@bufbuild/protobuf";
import { ActionNodeSchema } from "@pluggableharness/protocol/render";
import { describe, expect, it } from "vitest";
import { ActionFocus, RECENT_ACTIONS } from "../src/actions.ts";

const a = (id: string) => create(ActionNodeSchema, { id, label: id, provider: "p", toolName: "t" });

describe("ActionFocus", () => {
  it("orders panel actions before the transcript's newest, wraps, follows and leaves", () => {
    const f = new ActionFocus();
    expect(f.start()).toBe(false);
    f.shown([a("old")]);
    f.shown([a("new")]);
    f.setPanel([a("p1"), a("p2")]);
    expect(f.choices().map((x) => x.id)).toEqual(["p1", "p2", "new", "old"]);
    expect(f.start()).toBe(true);
    expect(f.current?.id).toBe("p1");
    f.move(-1);
    expect(f.current?.id).toBe("old");
    f.move(1);
    f.move(1);
    expect(f.current?.id).toBe("p2");
    expect(f.position).toEqual({ at: 2, of: 4 });
    // The panel is redrawn with p1 gone: focus stays on p2.
    f.setPanel([a("p2")]);
    expect(f.current?.id).toBe("p2");
    // p2 gone as well: focus leaves instead of jumping to another action.
    f.setPanel([]);
    expect(f.active).toBe(false);
    for (let i = 0; i < RECENT_ACTIONS + 5; i++) f.shown([a(`r${i}`)]);
    expect(f.choices()).toHaveLength(RECENT_ACTIONS);
    f.reset();
    expect(f.choices()).toEqual([]);
  });
});
