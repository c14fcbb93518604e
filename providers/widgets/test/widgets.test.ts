// The widgets provider: the status line and task list it derives from observe-mode hook
// dispatches (unit tests of the derivation), and the provider itself as a process:
// Attach streams only its own session's view, follows hook dispatches, refuses an
// Attach without a session and ends cleanly when cancelled.
import { fileURLToPath } from "node:url";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { HookMode, type HookPayloadSchema, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { RateLimitKind } from "@pluggableharness/protocol/model";
import { Region } from "@pluggableharness/protocol/render";
import { WidgetService, type WidgetUpdate } from "@pluggableharness/protocol/widget";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LaunchedPlugin, launchPlugin } from "../../../packages/conformance/src/launch.ts";
import { statusText, taskTree } from "../src/render.ts";
import { headroom, type SessionView, tasksFromResult } from "../src/state.ts";

const view = (over: Partial<SessionView> = {}): SessionView => ({
  model: "",
  contextTokens: 0,
  contextWindow: 0,
  costUsd: 0,
  rateLimits: [],
  tasks: undefined,
  taskProvider: "",
  version: 0,
  waiters: [],
  ...over,
});

const limit = (kind: RateLimitKind, l: bigint, r: bigint) =>
  ({ kind, limit: l, remaining: r }) as SessionView["rateLimits"][number];

describe("the status line", () => {
  it("says the model is pending before any response, with no cost yet", () => {
    expect(statusText(view())).toBe("model pending · $0.00");
  });

  it("shows model, context use against the window, small costs precisely, the tightest rate limit", () => {
    const text = statusText(
      view({
        model: "anthropic/claude-x",
        contextTokens: 50_000,
        contextWindow: 200_000,
        costUsd: 0.0042,
        rateLimits: [
          limit(RateLimitKind.REQUESTS, 100n, 80n),
          limit(RateLimitKind.INPUT_TOKENS, 1000n, 100n),
        ],
      }),
    );
    expect(text).toBe(
      "anthropic/claude-x · context 50k/200k (25%) · $0.0042 · rate limit: input tokens 10% left",
    );
  });

  it("falls back to a used percentage and ignores windows without numbers", () => {
    expect(
      headroom([{ kind: RateLimitKind.REQUESTS, usedPercent: 75 } as SessionView["rateLimits"][number]]),
    ).toBe("requests 25% left");
    expect(headroom([{ kind: RateLimitKind.REQUESTS } as SessionView["rateLimits"][number]])).toBe("");
  });
});

describe("the task list", () => {
  it("takes the whole list from a task tool's result, dropping malformed entries", () => {
    const tasks = tasksFromResult("task_create", undefined, {
      tasks: [
        { id: "1", title: "Write tests", status: "completed" },
        { id: "2", title: "Ship" },
        { title: 3 },
      ],
    });
    expect(tasks).toEqual([
      { id: "1", title: "Write tests", status: "completed" },
      { id: "2", title: "Ship", status: "pending" },
    ]);
  });

  it("ignores other tools and a task_list filtered by status (not the whole list)", () => {
    expect(tasksFromResult("read_file", undefined, { tasks: [] })).toBeUndefined();
    expect(tasksFromResult("task_list", { status: "pending" }, { tasks: [] })).toBeUndefined();
    expect(tasksFromResult("task_update", undefined, { tasks: "nope" })).toBeUndefined();
  });

  it("renders a count of done tasks and one marked line per task", () => {
    const tree = taskTree([
      { id: "1", title: "Write tests", status: "completed" },
      { id: "2", title: "Ship", status: "in_progress" },
    ]);
    const node = tree.root?.node;
    expect(node?.case).toBe("group");
    const lines = (node!.value as { children: { node: { value: { content: string } } }[] }).children.map(
      (c) => c.node.value.content,
    );
    expect(lines).toEqual(["Tasks 1/2", "☑ Write tests", "◐ Ship"]);
  });
});

describe("the provider as a process", () => {
  let plugin: LaunchedPlugin;
  beforeAll(() => {
    plugin = launchPlugin({
      executable: fileURLToPath(new URL("../src/main.ts", import.meta.url)),
      name: "widgets",
    });
  });
  afterAll(() => plugin?.close());

  /** Collects a session's updates; `next(n)` waits until n have arrived. */
  function watch(sessionId: string) {
    const controller = new AbortController();
    const updates: WidgetUpdate[] = [];
    let wake = () => {};
    const done = (async () => {
      try {
        for await (const u of plugin.host
          .client(WidgetService)
          .attach({ sessionId }, { signal: controller.signal })) {
          updates.push(u);
          wake();
        }
        return "ended";
      } catch (err) {
        return (err as Error).name;
      }
    })();
    const next = async (n: number) => {
      const deadline = Date.now() + 5_000;
      while (updates.length < n && Date.now() < deadline)
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 200);
        });
      return updates;
    };
    const stop = () => {
      controller.abort();
      return done;
    };
    return { updates, next, stop };
  }

  const dispatch = (sessionId: string, payload: MessageInitShape<typeof HookPayloadSchema>) =>
    plugin.host
      .client(HookSubscriberService)
      .dispatchHook({ mode: HookMode.OBSERVE, payload, callContext: { sessionId } });

  it("streams each session's own view, moved only by hook dispatches for that session", async () => {
    const a = watch("session-a");
    const b = watch("session-b");
    expect((await a.next(1))[0]).toMatchObject({ region: Region.INPUT_BAR, replace: true });
    await b.next(1);
    const res = await dispatch("session-a", {
      point: {
        case: "postModelResponse",
        value: {
          model: { provider: "anthropic", id: "claude-x" },
          usage: { inputTokens: 1000n, outputTokens: 10n },
          contextWindow: 200_000n,
          costUsd: 0.5,
        },
      },
    });
    expect(res.outcome.case).toBe("observe");
    const text = (u: WidgetUpdate) => (u.content!.root!.node.value as { content?: string }).content;
    expect(text((await a.next(2))[1]!)).toBe("anthropic/claude-x · context 1.0k/200k (1%) · $0.50");
    await dispatch("session-a", {
      point: {
        case: "postToolCall",
        value: {
          call: { toolName: "task_create", arguments: {} },
          outcome: {
            case: "result",
            value: { payload: { tasks: [{ id: "1", title: "Ship it", status: "pending" }] } },
          },
        },
      },
    });
    const sidebar = (await a.next(3))[2]!;
    expect(sidebar.region).toBe(Region.SIDEBAR);
    // Session B saw its own first status line only.
    expect(b.updates).toHaveLength(1);
    expect(text(b.updates[0]!)).toBe("model pending · $0.00");
    // Cancelling ends each stream without an error status; the plugin keeps serving.
    expect(await a.stop()).toBe("AbortError");
    expect(await b.stop()).toBe("AbortError");
    expect(plugin.host.crashCount).toBe(0);
  }, 30_000);

  it("declares a feed of what it draws: the task tools' results and usage only", async () => {
    // Without it the kernel sends every tool result and response text to this process.
    const caps = (await plugin.host.client(WidgetService).getCapabilities({})).capabilities;
    expect(caps?.feed?.tools.slice().sort()).toEqual(["task_create", "task_list", "task_update"]);
    expect(caps?.feed?.usageOnly).toBe(true);
  });

  it("refuses an Attach without a session with INVALID_ARGUMENT", async () => {
    const attempt = async () => {
      for await (const _ of plugin.host
        .client(WidgetService)
        .attach({ sessionId: "" }, { signal: AbortSignal.timeout(3_000) })) {
        return "streamed";
      }
      return "ended";
    };
    await expect(attempt()).rejects.toMatchObject({ code: 3 });
  });
});
