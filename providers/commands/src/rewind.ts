// /rewind: go back to just before one of the session's prompts, files included, and go on
// in a fork of the conversation. `/rewind` lists the prompts, `/rewind <n|message-id>`
// shows what would change (the kernel's plan) and nothing else, `/rewind <n> confirm`
// does it, but only the plan this provider showed for that prompt: the kernel recomputes
// the plan and refuses to act on one that changed since (it answers with the new plan,
// which is shown and must be confirmed again). The kernel then tells every frontend
// attached to the session to continue in the fork. docs/decisions/sessions-and-state.md, "/rewind in every frontend".
import type { JsonObject } from "@bufbuild/protobuf";
import type { RewindAnchor, RewindPlan } from "@pluggableharness/protocol/kernel";
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { common, control } from "./tools.ts";

/** The plan shown last, per session: what a confirm may carry out. */
const shown = new Map<string, { messageId: string; number: number; digest: string }>();

function firstLine(text: string): string {
  const l = text.split("\n")[0] ?? "";
  return l.length > 70 ? `${l.slice(0, 69)}…` : l;
}

function anchorLine(a: RewindAnchor | undefined): string {
  return a ? `${a.number}. ${firstLine(a.text)}  (${a.messageId})` : "";
}

function planned(sessionId: string, plan: RewindPlan, note?: string): JsonObject {
  const n = plan.anchor?.number ?? 0;
  shown.set(sessionId, { messageId: plan.anchor?.messageId ?? "", number: n, digest: plan.digest });
  return {
    text: [
      ...(note ? [note] : []),
      ...plan.lines,
      `Nothing has changed yet. To go ahead: /rewind ${n} confirm (anything else leaves everything as it is).`,
    ].join("\n"),
    state: "plan",
    number: n,
  };
}

export const rewindTool: ToolDefinition<{ to?: string }> = {
  ...common,
  name: "rewind",
  description:
    "Go back to just before one of your prompts: the conversation continues in a fork and the files the later turns changed are put back. Without arguments it lists the prompts; with a number (or message id) it shows what would change; add 'confirm' to do it.",
  input: s.object({
    to: s.string(
      "A prompt's number from /rewind (or its message id), then 'confirm' once its plan was shown.",
    ),
  }),
  output: s.object(
    {
      text: s.string(),
      state: s.string("What this call did.", ["list", "plan", "rewound"]),
      anchors: s.array(s.string(), "The prompts, numbered (list)."),
      number: s.number("The prompt the plan or rewind is for."),
      fork_session_id: s.string("The session the conversation continues in (rewound)."),
    },
    ["text", "state"],
  ),
  idempotent: false,
  async invoke(args, ctx): Promise<JsonObject> {
    const sessionId = ctx.sessionId ?? "";
    const words = (args.to ?? "").trim().split(/\s+/).filter(Boolean);
    const confirm = words.length === 2 && /^(confirm|yes|y)$/i.test(words[1]!);
    if (words.length > 2 || (words.length === 2 && !confirm))
      throw new ToolFailure("invalid_arguments", "write /rewind, /rewind <n>, or /rewind <n> confirm");
    const to = words[0] ?? "";
    if (to === "") {
      shown.delete(sessionId);
      const res = await control(ctx, { case: "listRewindAnchors", value: {} });
      if (res.case !== "rewindAnchors")
        throw new ToolFailure("execution_failed", "the kernel did not list the prompts");
      const anchors = res.value.anchors.map(anchorLine);
      return {
        text:
          anchors.length === 0
            ? "This session has no prompts to rewind to yet."
            : `Rewind to just before one of your prompts (/rewind <number> shows what would change):\n${anchors.join("\n")}`,
        state: "list",
        anchors,
      };
    }
    const last = shown.get(sessionId);
    const same = last && (to === String(last.number) || to.toUpperCase() === last.messageId);
    if (!confirm || !last || !same) {
      // Nothing is done before its plan was shown: a confirm of an unseen plan shows it.
      const res = await control(ctx, { case: "planRewind", value: { to } });
      if (res.case !== "rewindPlan") throw new ToolFailure("execution_failed", "the kernel did not plan");
      return planned(
        sessionId,
        res.value,
        confirm ? "This is what the rewind does; it has not been shown before." : undefined,
      );
    }
    const res = await control(ctx, {
      case: "applyRewind",
      value: { to: last.messageId, digest: last.digest },
    });
    if (res.case !== "rewound") throw new ToolFailure("execution_failed", "the kernel did not rewind");
    if (res.value.stale)
      return planned(sessionId, res.value.stale, "What the rewind would do changed since it was shown:");
    shown.delete(sessionId);
    const fork = res.value.forkSessionId;
    return {
      text: `${res.value.summary} The conversation continues in ${fork}, from just before prompt ${last.number} (elsewhere: agent run --resume ${fork}, or agent attach ${fork} under agent serve).`,
      state: "rewound",
      number: last.number,
      fork_session_id: fork,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload as { text: string; state: string; anchors?: string[] };
    if (p.state === "list" && p.anchors && p.anchors.length > 0)
      return r.group([
        r.text("Rewind to just before one of your prompts:", "bold"),
        r.list(p.anchors.map((a) => r.text(a))),
        r.text("/rewind <number> shows what would change; nothing changes until you confirm.", "dim"),
      ]);
    if (p.state === "rewound") return r.text(p.text, "success");
    if (p.state === "plan") {
      const lines = p.text.split("\n");
      return r.group([...lines.slice(0, -1).map((l) => r.text(l)), r.text(lines.at(-1) ?? "", "warning")]);
    }
    return r.text(p.text, "dim");
  },
};
