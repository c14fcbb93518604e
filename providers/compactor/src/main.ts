// The compactor provider's executable: a ContextService declaring `compactor`. It leaves the
// chain as it is on every firing, and rewrites the conversation history only when the
// kernel asks (ContextRequest.compaction): the older part becomes a model-written summary
// (KernelCallbackService.Summarize, so the call is routed, budgeted and booked by the
// kernel), the recent tail is kept whole (plan.ts).
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { type Message, Stability } from "@pluggableharness/protocol/content";
import { ContextService } from "@pluggableharness/protocol/context";
import { type ConfigField, configError, configSchema, readConfig } from "@pluggableharness/tool-kit";
import { chooseCut, chunks, messageTokens, rewrite, shortenTail, transcript, USER } from "./plan.ts";

const CONFIG: readonly ConfigField[] = [
  {
    name: "keep_recent_tokens",
    type: "number",
    default: 0,
    description:
      "Tokens of the most recent conversation kept word for word (0: what the kernel's target leaves after the summary).",
  },
  {
    name: "summary_max_tokens",
    type: "number",
    default: 2000,
    description: "Longest summary asked of the model.",
  },
  {
    name: "tool_output_chars",
    type: "number",
    default: 2000,
    description: "Characters of each tool call's input and output shown to the summarising model.",
  },
  {
    name: "instructions",
    type: "string",
    default: "",
    description: "Extra guidance for every summary (what this project needs kept).",
  },
];

interface Options {
  keepRecentTokens: number;
  summaryMaxTokens: number;
  toolOutputChars: number;
  instructions: string;
}

let options: Options = {
  keepRecentTokens: 0,
  summaryMaxTokens: 2000,
  toolOutputChars: 2000,
  instructions: "",
};

const INSTRUCTIONS = `You compact the history of a coding-agent session so that the agent can carry on with less context.
You are given the earlier part of the conversation as a transcript (and possibly the summary of an even earlier part, at its start).
Write a summary the agent can continue from, without asking anything:
- the user's goals and requests, with their exact wording where it matters;
- what has been done: files read, created or changed (paths), commands run and their outcomes, decisions made and why;
- errors met and how they were solved, and anything that failed and was not;
- the state of the work now and the next steps that were planned;
- names, values, identifiers and snippets that later steps will need, copied exactly.
Leave out pleasantries and anything superseded. Write plain text with short headed lists. Do not call tools.`;

function asNumber(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

await serve({
  packageJson: new URL("../package.json", import.meta.url),
  services: [
    service(ContextService, {
      getCapabilities: () => ({
        capabilities: {
          // 0: the compactor's chain is capped by the model's effective ceiling only.
          defaultTokenBudget: 0n,
          stability: Stability.DYNAMIC,
          compactor: true,
          configSchema: configSchema(CONFIG),
        },
      }),
      configure(req) {
        const { values, diagnostics } = readConfig(CONFIG, req.config);
        const v = values as JsonObject;
        for (const name of ["keep_recent_tokens", "summary_max_tokens", "tool_output_chars"]) {
          const n = v[name];
          if (typeof n === "number" && (!Number.isInteger(n) || n < 0))
            diagnostics.push(configError([name], `${name} must be a whole number of at least 0`));
        }
        if (asNumber(v["summary_max_tokens"], 2000) < 256)
          diagnostics.push(configError(["summary_max_tokens"], "summary_max_tokens must be at least 256"));
        if (asNumber(v["tool_output_chars"], 2000) < 100)
          diagnostics.push(configError(["tool_output_chars"], "tool_output_chars must be at least 100"));
        if (diagnostics.length === 0) {
          options = {
            keepRecentTokens: asNumber(v["keep_recent_tokens"], 0),
            summaryMaxTokens: asNumber(v["summary_max_tokens"], 2000),
            toolOutputChars: asNumber(v["tool_output_chars"], 2000),
            instructions: typeof v["instructions"] === "string" ? v["instructions"] : "",
          };
        }
        return { result: { diagnostics } };
      },
      async contribute(req, ctx) {
        // A negative budget is a malformed request (invalid_request), whatever is asked.
        if (req.tokenBudget < 0n) throw new StatusError(3, "token_budget is negative");
        // The chain passes through untouched: this provider owns no section.
        const sections = req.priorSections;
        const ask = req.compaction;
        if (!ask) return { sections };
        const history: Message[] = req.conversationHistory;
        const estimate = history.reduce((n, m) => n + messageTokens(m), 0);
        const counted = Number(req.historyTokens);
        const scale = estimate > 0 && counted > estimate ? counted / estimate : 1;
        const target = Number(ask.targetHistoryTokens) || Math.floor((counted || estimate) / 2);
        const summaryCap = Math.min(options.summaryMaxTokens, Math.max(256, Math.floor(target * 0.3)));
        let keep = Math.max(0, target - summaryCap);
        if (options.keepRecentTokens > 0) keep = Math.min(keep, options.keepRecentTokens);
        const cut = chooseCut(history, keep, scale);
        if (cut === undefined) return { sections };
        const older = history.slice(0, cut);
        const tail = shortenTail(history.slice(cut), Math.floor(keep / scale));

        // The summarising model sees at most about half its ceiling of transcript per call;
        // a longer one is summarised piece by piece, each piece with the summary so far.
        const ceiling = Number(req.modelTarget?.effectiveCeiling ?? 0n) || 32_000;
        const pieceChars = Math.max(4_000, Math.floor((ceiling / scale) * 0.5) * 4);
        const guidance = [options.instructions, ask.instructions].filter((s) => s.trim() !== "").join("\n");
        const instructions = guidance ? `${INSTRUCTIONS}\n\nAlso: ${guidance}` : INSTRUCTIONS;
        const kernel = await ctx.kernel.service();
        let summary = "";
        for (const piece of chunks(transcript(older, options.toolOutputChars), pieceChars)) {
          const text = summary
            ? `Summary of the conversation before this part:\n${summary}\n\nThe next part of the conversation:\n${piece}`
            : `The conversation so far:\n${piece}`;
          let answer: Awaited<ReturnType<typeof kernel.summarize>>;
          try {
            answer = await kernel.summarize(
              {
                sessionId: req.sessionId,
                instructions,
                messages: [{ role: USER, content: [{ block: { case: "text", value: { text } } }] }],
                maxOutputTokens: BigInt(summaryCap),
              },
              { signal: ctx.signal },
            );
          } catch (err) {
            throw new StatusError(14, `the summary call failed: ${(err as Error).message}`);
          }
          summary = answer.text;
        }
        return {
          sections,
          rewrittenHistory: { messages: rewrite(summary, tail, `compaction-${randomUUID()}`) },
        };
      },
    }),
  ],
});
