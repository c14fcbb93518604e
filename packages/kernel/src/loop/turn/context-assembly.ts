// Step 1 of RunTurn, context-assemble: every context provider's Contribute, chained in
// agent.hcl declaration order. Each provider gets the chain built so far and its token
// budget, and returns the whole chain with its own sections added. The kernel keeps the
// chain honest: a non-compactor that touched another provider's section has its whole
// answer discarded; sections over budget (or carrying non-text content) are dropped and
// logged; a provider that fails or times out is skipped for this turn. Each provider's
// contribution is persisted as a context_contribution event, with its budget and what it
// returned (agent run --verbose shows them), unless it is identical to that provider's last
// one in this session (see persistContribution). Memory providers take part at their declaration
// position through Recall (memory-recall.ts); both get the session's files_touched
// (files-touched.ts).
import { create, equals, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { type ContextSection, ContextSectionSchema, type Message } from "@pluggableharness/protocol/content";
import { ContextContributionEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { ModelTarget } from "@pluggableharness/protocol/model";
import { sameBytes } from "../../domain/index.ts";
import type { LoadedProvider } from "../../plugins/providers.ts";
import type { LoopDeps } from "../deps.ts";
import type { EventSink, TurnContext, TurnPorts } from "../ports.ts";
import { recallSections } from "./memory-recall.ts";
import { providerBudget } from "./provider-budget.ts";

export interface AssembledContext {
  readonly sections: ContextSection[];
  /** Never set: compactors rewrite the history only when asked (compaction.ts). Kept for turn.ts. */
  readonly rewrittenHistory?: Message[];
  readonly totalTokens: number;
}

export interface AssembleInput {
  readonly target: ModelTarget;
  readonly history: readonly Message[];
  readonly historyTokens: number;
  /** What the previous turn's sections came to (providers are told it). */
  readonly assembledTokensLastTurn: number;
}

/** A provider's cap: agent.hcl's token_budget, else its declared default, never above the ceiling. */
export function tokenBudget(p: LoadedProvider, target: ModelTarget): number {
  return providerBudget(p, p.context?.defaultTokenBudget, target);
}

function sectionTokens(sections: readonly ContextSection[]): number {
  return sections.reduce((n, s) => n + Number(s.tokens), 0);
}

function textOnly(s: ContextSection): boolean {
  return s.content.every((b) => b.block.case === "text");
}

export async function assembleContext(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: Pick<TurnPorts, "sink" | "filesTouched">,
  input: AssembleInput,
): Promise<AssembledContext> {
  const log = deps.log.child("context");
  let chain: ContextSection[] = [];
  ports.filesTouched.observe(input.history, ctx.workingDirectory);
  const filesTouched = ports.filesTouched.list();
  for (const p of deps.providers.contextAssemblers()) {
    if (ctx.signal.aborted) break;
    if (!p.context) {
      const recalled = await recallSections(deps, ctx, p, { target: input.target, filesTouched });
      if (ctx.signal.aborted) break;
      chain = [...chain, ...recalled.sections];
      persistContribution(ports.sink, p, "memory", {
        turnId: ctx.turnId,
        sections: recalled.sections,
        droppedLabels: recalled.dropped,
        tokenBudget: BigInt(recalled.budget),
        returnedTokens: BigInt(recalled.returnedTokens),
        notes: recalled.notes,
      });
      continue;
    }
    const budget = tokenBudget(p, input.target);
    const compactor = p.context?.compactor === true;
    let response: Awaited<ReturnType<typeof p.ports.context.contribute>>;
    try {
      response = await deps.tracker.run(p.name, ctx.sessionId, "context", () =>
        p.ports.context.contribute(
          {
            sessionId: ctx.sessionId,
            parentSessionId: ctx.parentSessionId ?? "",
            turnId: ctx.turnId,
            tokenBudget: BigInt(budget),
            modelTarget: input.target,
            filesTouched,
            workingDirectory: ctx.workingDirectory,
            priorSections: chain,
            // The conversation goes to a compactor only when the kernel asks it to compact
            // (compaction.ts); an ordinary firing leaves the chain alone, so it gets none.
            conversationHistory: [],
            historyTokens: BigInt(input.historyTokens),
            assembledTokensLastTurn: BigInt(input.assembledTokensLastTurn),
          },
          { timeoutMs: deps.limits.contributeTimeoutMs, signal: ctx.signal },
        ),
      );
    } catch (err) {
      if (ctx.signal.aborted) break;
      log.warn(
        `context provider "${p.name}" failed; its sections are left out this turn`,
        {
          error: (err as Error).message,
        },
        ctx.sessionId,
      );
      continue;
    }

    let next: ContextSection[];
    let own: ContextSection[];
    if (compactor) {
      next = response.sections.map((s) => create(ContextSectionSchema, s));
      own = next.filter((s) => !chain.some((c) => equals(ContextSectionSchema, c, s)));
      if (sectionTokens(next) > budget) {
        log.warn(
          `compactor "${p.name}" returned a chain over its budget (${sectionTokens(next)} > ${budget}); discarded`,
          undefined,
          ctx.sessionId,
        );
        continue;
      }
    } else {
      const prefix = response.sections.slice(0, chain.length);
      const untouched =
        prefix.length === chain.length && prefix.every((s, i) => equals(ContextSectionSchema, s, chain[i]!));
      if (!untouched) {
        log.warn(
          `context provider "${p.name}" changed sections it does not own (scope violation); its answer is discarded`,
          undefined,
          ctx.sessionId,
        );
        continue;
      }
      own = response.sections.slice(chain.length).map((s) => create(ContextSectionSchema, s));
      next = [...chain];
    }

    const dropped: string[] = [];
    const notes: string[] = [];
    const kept: ContextSection[] = [];
    const returnedTokens = sectionTokens(own);
    for (const s of own) {
      s.provider = p.name;
      if (!textOnly(s)) {
        const note = `context section "${s.label}" from "${p.name}" carries non-text content; dropped`;
        log.warn(note, undefined, ctx.sessionId);
        notes.push(note);
        dropped.push(s.label);
      } else kept.push(s);
    }
    if (!compactor && sectionTokens(kept) > budget) {
      const note = `context provider "${p.name}" exceeded its budget (${sectionTokens(kept)} > ${budget} tokens); its sections are dropped`;
      log.warn(note, { labels: kept.map((s) => s.label) }, ctx.sessionId);
      notes.push(note);
      dropped.push(...kept.map((s) => s.label));
      kept.length = 0;
    }
    if (compactor) next = next.filter((s) => !own.includes(s) || kept.includes(s));
    else next.push(...kept);
    chain = next;
    if (compactor && response.rewrittenHistory) {
      // It was not given the conversation, so whatever it sent cannot be a rewrite of it.
      log.warn(
        `compactor "${p.name}" sent rewritten_history outside a compaction; ignored (the kernel asks when to compact)`,
        undefined,
        ctx.sessionId,
      );
    }

    persistContribution(ports.sink, p, "context", {
      turnId: ctx.turnId,
      sections: kept,
      droppedLabels: dropped,
      tokenBudget: BigInt(budget),
      returnedTokens: BigInt(returnedTokens),
      notes,
    });
  }
  return { sections: chain, totalTokens: sectionTokens(chain) };
}

/**
 * Per session, per provider: the last contribution persisted, without its turn id. Most
 * firings return what the previous one did (convention files, an unchanged git state);
 * persisting and publishing it again every model call only grows the log, so a firing
 * identical to the last one is left out. Kept beside the session's event sink, not on the
 * session: a resumed session (a new sink) records its first firing again.
 */
const lastContribution = new WeakMap<EventSink, Map<string, Uint8Array>>();

function persistContribution(
  sink: EventSink,
  p: LoadedProvider,
  category: "context" | "memory",
  event: MessageInitShape<typeof ContextContributionEventSchema>,
): void {
  const producer = p.producers[category];
  if (!producer) return;
  const message = create(ContextContributionEventSchema, event);
  const key = toBinary(
    ContextContributionEventSchema,
    create(ContextContributionEventSchema, { ...event, turnId: "" }),
  );
  const seen = lastContribution.get(sink) ?? new Map<string, Uint8Array>();
  lastContribution.set(sink, seen);
  const last = seen.get(`${category}\u0000${p.name}`);
  if (last && sameBytes(last, key)) return;
  seen.set(`${category}\u0000${p.name}`, key);
  sink.persist(EventKind.CONTEXT_CONTRIBUTION, producer, toBinary(ContextContributionEventSchema, message));
}
