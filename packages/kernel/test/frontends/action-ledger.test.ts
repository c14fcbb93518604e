// The ledger of shown ActionNodes: a trigger passes only as an exact echo of one (key
// order aside), nested nodes and permission previews count, and the oldest ids go first.
import { create } from "@bufbuild/protobuf";
import { ServerEventSchema } from "@pluggableharness/protocol/frontend";
import { describe, expect, it } from "vitest";
import { ActionLedger, MAX_OFFERED_ACTIONS } from "../../src/frontends/action-ledger.ts";

const action = (id: string, args: Record<string, unknown> = { id: "1", status: "completed" }) => ({
  node: {
    case: "action" as const,
    value: { id, label: "done", provider: "task", toolName: "task_update", args: args as never },
  },
});

const render = (...children: ReturnType<typeof action>[]) =>
  create(ServerEventSchema, {
    sessionId: "s",
    event: {
      case: "render",
      value: {
        content: {
          content: {
            root: {
              node: {
                case: "list",
                value: { items: [{ node: { case: "group", value: { children } } }] },
              },
            },
          },
        },
      },
    },
  });

describe("ActionLedger", () => {
  it("accepts an exact echo of a shown node, whatever its key order, and nothing else", () => {
    const l = new ActionLedger();
    l.note(render(action("a")));
    const echo = { nodeId: "a", provider: "task", toolName: "task_update" };
    expect(l.refusal({ ...echo, args: { status: "completed", id: "1" } })).toBeUndefined();
    expect(l.refusal({ ...echo, args: { id: "2", status: "completed" } })).toContain("does not match");
    expect(l.refusal({ ...echo, provider: "exec", args: { id: "1", status: "completed" } })).toContain(
      "does not match",
    );
    expect(l.refusal({ ...echo, nodeId: "b", args: {} })).toBe('no action "b" was shown in this session');
  });

  it("counts actions in permission previews, and forgets the oldest ids past its bound", () => {
    const l = new ActionLedger();
    l.note(
      create(ServerEventSchema, {
        event: {
          case: "permissionRequest",
          value: { planItem: { id: "p", preview: { root: action("in-preview") } } },
        },
      }),
    );
    expect(
      l.refusal({
        nodeId: "in-preview",
        provider: "task",
        toolName: "task_update",
        args: { id: "1", status: "completed" },
      }),
    ).toBeUndefined();
    for (let i = 0; i < MAX_OFFERED_ACTIONS; i++) l.note(render(action(`n${i}`)));
    const echo = { provider: "task", toolName: "task_update", args: { id: "1", status: "completed" } };
    expect(l.refusal({ ...echo, nodeId: "in-preview" })).toContain("no action");
    expect(l.refusal({ ...echo, nodeId: `n${MAX_OFFERED_ACTIONS - 1}` })).toBeUndefined();
  });
});
