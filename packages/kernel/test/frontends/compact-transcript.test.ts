// The compact transcript: a tool call renders as one line with its arguments summarised
// (the full JSON one fold away only when the line cannot show it all), and a context
// contribution reaches only a subscriber that asked for the verbose transcript.
import { create, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { ContextContributionEventSchema, ToolCallEventSchema } from "@pluggableharness/protocol/event";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { describe, expect, it } from "vitest";
import { argumentSummary } from "../../src/frontends/argument-summary.ts";
import { SessionChannel } from "../../src/frontends/channel.ts";
import { genericRenderTree, placed, type RenderableEvent } from "../../src/frontends/renderer.ts";
import { discardLog, KernelLogger } from "../../src/index.ts";

const stored = (sequence: number, kind: EventKind, payload: Uint8Array): RenderableEvent => ({
  sequence,
  kind,
  kindText: EventKind[kind]!.toLowerCase(),
  producer: { category: PluginCategory.KERNEL, name: "kernel", version: "0.1.0" },
  schemaVersion: "1",
  payload,
});

const toolCall = (args: Record<string, unknown>) =>
  stored(
    1,
    EventKind.TOOL_CALL,
    toBinary(
      ToolCallEventSchema,
      create(ToolCallEventSchema, {
        provider: "exec",
        call: { id: "toolu_01ABCDEF", toolName: "bash", arguments: args as never },
      }),
    ),
  );

describe("tool arguments in one line", () => {
  it("shows the subject by value first, the rest as name: value", () => {
    expect(argumentSummary({ path: "calc.js" })).toEqual({ line: "calc.js", complete: true });
    expect(argumentSummary({ timeout_ms: 5000, command: "npm test" })).toEqual({
      line: "npm test, timeout_ms: 5000",
      complete: true,
    });
    expect(argumentSummary({})).toEqual({ line: "", complete: true });
  });

  it("keeps a multi-line or long value on one line, cut, and says it is not complete", () => {
    const multi = argumentSummary({ path: "a.txt", content: "one\ntwo" });
    expect(multi).toEqual({ line: "a.txt, content: one two", complete: false });
    const long = argumentSummary({ command: "x".repeat(300) });
    expect(long.line.length).toBe(100);
    expect(long.line.endsWith("…")).toBe(true);
    expect(long.complete).toBe(false);
  });

  it("renders a call as one bold line without JSON or its id; a lossy one folds the JSON", () => {
    const short = genericRenderTree(toolCall({ command: "date" })).root?.node;
    expect(short?.case).toBe("text");
    expect(short?.case === "text" && short.value.content).toBe("→ exec.bash date");
    const long = genericRenderTree(toolCall({ command: "echo a\necho b" })).root?.node;
    expect(long?.case).toBe("collapsible");
    if (long?.case !== "collapsible") return;
    expect(long.value.summary).toBe("→ exec.bash echo a echo b");
    expect(long.value.collapsedByDefault).toBe(true);
    const json = long.value.children[0]?.node;
    expect(json?.case === "codeBlock" && JSON.parse(json.value.content)).toEqual({
      command: "echo a\necho b",
    });
    expect(long.value.summary).not.toContain("toolu_");
  });
});

describe("context contributions", () => {
  it("are sent to a verbose subscriber only, live and in a backfill", async () => {
    const channel = new SessionChannel(
      "S",
      async (e) => placed(genericRenderTree(e)),
      new KernelLogger(discardLog),
    );
    const context = stored(
      1,
      EventKind.CONTEXT_CONTRIBUTION,
      toBinary(ContextContributionEventSchema, create(ContextContributionEventSchema, {})),
    );
    const plain: ServerEvent[] = [];
    const verbose: ServerEvent[] = [];
    channel.subscribe({ interactive: true, deliver: (e) => plain.push(e) });
    channel.subscribe({ interactive: false, verbose: true, deliver: (e) => verbose.push(e) });
    channel.publishPersisted(context);
    await channel.flush();
    expect(plain).toEqual([]);
    expect(verbose.map((e) => e.event.case)).toEqual(["render"]);

    const backfilled = async (isVerbose: boolean) => {
      const got: ServerEvent[] = [];
      await channel.attach(
        { interactive: false, verbose: isVerbose, deliver: (e) => got.push(e) },
        {
          opening: { event: { case: "sessionAttached", value: {} } },
          backfill: { events: () => [context] },
        },
      );
      return got.map((e) => e.event.case);
    };
    expect(await backfilled(false)).toEqual(["sessionAttached", "backfillComplete"]);
    expect(await backfilled(true)).toEqual(["sessionAttached", "render", "backfillComplete"]);
  });
});
