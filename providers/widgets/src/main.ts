// The widgets provider's executable: a WidgetService whose Attach streams the status
// line (REGION_INPUT_BAR) and the task list (REGION_SIDEBAR) of one session, and a
// HookSubscriberService the kernel implicitly subscribes, in observe mode, to the points
// GetCapabilities names (post-model-response, post-tool-call). Nothing else feeds it, and
// its feed asks the kernel for only what it draws (no response text, no other tools' results).
import { StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { HookPoint } from "@pluggableharness/protocol/common";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { Region } from "@pluggableharness/protocol/render";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { statusText, statusTree, taskTree } from "./render.ts";
import { changed, nextChange, TASK_TOOL_NAMES, tasksFromResult, viewOf } from "./state.ts";

await serve({
  packageJson: new URL("../package.json", import.meta.url),
  services: [
    service(WidgetService, {
      getCapabilities: () => ({
        capabilities: {
          regions: [Region.INPUT_BAR, Region.SIDEBAR],
          configSchema: { attributes: [] },
          supportedHookPoints: [HookPoint.POST_MODEL_RESPONSE, HookPoint.POST_TOOL_CALL],
          // Only what is drawn crosses: the task tools' results and the response's numbers.
          feed: { tools: [...TASK_TOOL_NAMES], usageOnly: true },
        },
      }),
      configure: () => ({ result: {} }),
      async *attach(req, ctx) {
        // Attach is session-scoped; without a session there is nothing to show or follow.
        if (!req.sessionId) throw new StatusError(3, "Attach needs a session_id");
        const v = viewOf(req.sessionId);
        let status = "";
        let tasks = "";
        for (;;) {
          const s = statusText(v);
          if (s !== status) {
            status = s;
            yield { region: Region.INPUT_BAR, content: statusTree(v), replace: true };
          }
          const t = v.tasks ? JSON.stringify([v.taskProvider, v.tasks]) : "";
          if (v.tasks && t !== tasks) {
            tasks = t;
            yield { region: Region.SIDEBAR, content: taskTree(v.tasks, v.taskProvider), replace: true };
          }
          const seen = v.version;
          while (v.version === seen && !ctx.signal.aborted) await nextChange(v, ctx.signal);
          if (ctx.signal.aborted) return;
        }
      },
    }),
    service(HookSubscriberService, {
      dispatchHook(req) {
        const sessionId = req.callContext?.sessionId;
        const p = req.payload?.point;
        if (sessionId && p?.case === "postModelResponse") {
          const v = viewOf(sessionId);
          const m = p.value;
          if (m.model) v.model = `${m.model.provider}/${m.model.id}`;
          const u = m.usage;
          if (u) {
            v.contextTokens = Number(u.inputTokens + (u.cacheReadTokens ?? 0n) + (u.cacheWriteTokens ?? 0n));
            if (u.rateLimits.length > 0) v.rateLimits = [...u.rateLimits];
          }
          v.contextWindow = Number(m.contextWindow);
          v.costUsd += m.costUsd;
          changed(v);
        } else if (sessionId && p?.case === "postToolCall" && p.value.outcome.case === "result") {
          const tasks = tasksFromResult(
            p.value.call?.toolName ?? "",
            p.value.call?.arguments,
            p.value.outcome.value.payload,
          );
          if (tasks) {
            const v = viewOf(sessionId);
            v.tasks = tasks;
            v.taskProvider = p.value.provider;
            changed(v);
          }
        }
        return { outcome: { case: "observe", value: {} } };
      },
    }),
  ],
});
