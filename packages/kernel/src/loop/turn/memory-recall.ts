// A memory provider's part in context-assemble: Recall, then the kernel's translation of
// each record into an ordinary ContextSection (label "memory:<type>:<id>", dynamic), put
// into the chain at the provider's declaration position. Recall shares the context
// providers' budget rules: the cap is agent.hcl's token_budget, else the provider's
// default_token_budget, never above the ceiling; an answer over it is refused whole, as
// is a budget_exceeded failure. The kernel also keeps out what the protocol says ordinary
// recall must never show: pending drafts, non-text content, and session-scoped records
// written outside this session and its ancestors.
import { create } from "@bufbuild/protobuf";
import { type ContextSection, ContextSectionSchema, Stability } from "@pluggableharness/protocol/content";
import { type MemoryRecord, MemoryScope, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import type { ModelTarget } from "@pluggableharness/protocol/model";
import type { LoadedProvider } from "../../plugins/providers.ts";
import { ProviderCallError } from "../../providers/ports.ts";
import type { LoopDeps } from "../deps.ts";
import type { TurnContext } from "../ports.ts";
import { providerBudget } from "./provider-budget.ts";

const RESOURCE_EXHAUSTED = 8;

export interface RecallOutcome {
  /** Sections to append to the chain (empty when refused). */
  readonly sections: ContextSection[];
  readonly budget: number;
  /** Tokens the provider's answer claimed, kept or not. */
  readonly returnedTokens: number;
  readonly dropped: string[];
  readonly notes: string[];
}

export interface RecallInput {
  readonly target: ModelTarget;
  readonly filesTouched: readonly string[];
}

/** A memory provider's cap, resolved like a context provider's. */
export function memoryBudget(p: LoadedProvider, target: ModelTarget): number {
  return providerBudget(p, p.memory?.defaultTokenBudget, target);
}

export function memoryLabel(r: MemoryRecord): string {
  const type = (MemoryType[r.type] ?? "unspecified").toLowerCase();
  return `memory:${type}:${r.id}`;
}

/** The line the kernel puts before a recalled record, so the model knows what it is reading. */
export function memoryHeading(r: MemoryRecord): string {
  const type = (MemoryType[r.type] ?? "unspecified").toLowerCase();
  const scope = (MemoryScope[r.scope] ?? "unspecified").toLowerCase();
  return `[Recalled memory "${r.id}" (${type}, ${scope} scope)${r.title ? `: ${r.title}` : ""}]`;
}

/**
 * Record -> ContextSection, the translation the memory protocol fixes, with the kernel's
 * heading line in front (framing like a section's label: not charged to the provider's
 * budget, so `tokens` stays the record's own count).
 */
export function translateRecord(provider: string, r: MemoryRecord): ContextSection {
  return create(ContextSectionSchema, {
    provider,
    label: memoryLabel(r),
    content: [{ block: { case: "text", value: { text: memoryHeading(r) } } }, ...r.content],
    tokens: r.tokens,
    stability: Stability.DYNAMIC,
    truncated: false,
  });
}

export async function recallSections(
  deps: LoopDeps,
  ctx: TurnContext,
  p: LoadedProvider,
  input: RecallInput,
): Promise<RecallOutcome> {
  const log = deps.log.child("memory");
  const budget = memoryBudget(p, input.target);
  const refused = (note: string, returnedTokens = 0, dropped: string[] = []): RecallOutcome => {
    log.warn(note, undefined, ctx.sessionId);
    return { sections: [], budget, returnedTokens, dropped, notes: [note] };
  };
  let records: MemoryRecord[];
  try {
    const res = await deps.tracker.run(p.name, ctx.sessionId, "memory", () =>
      p.ports.memory.recall(
        {
          sessionId: ctx.sessionId,
          turnId: ctx.turnId,
          tokenBudget: BigInt(budget),
          modelTarget: input.target,
          filesTouched: [...input.filesTouched],
          workingDirectory: ctx.workingDirectory,
          includePending: false,
          ancestorSessionIds: [...ctx.ancestors],
        },
        { timeoutMs: deps.limits.contributeTimeoutMs, signal: ctx.signal },
      ),
    );
    records = res.records;
  } catch (err) {
    if (err instanceof ProviderCallError && err.code === RESOURCE_EXHAUSTED) {
      return refused(
        `memory provider "${p.name}" could not fit its recall into ${budget} tokens (budget_exceeded)`,
      );
    }
    return refused(
      `memory provider "${p.name}" failed to recall; nothing from it this turn: ${(err as Error).message}`,
    );
  }

  const notes: string[] = [];
  const dropped: string[] = [];
  const kept: ContextSection[] = [];
  let returnedTokens = 0;
  // A session-scoped record is visible to the session that wrote it and its descendants.
  const sessionTree = new Set([ctx.sessionId, ...ctx.ancestors]);
  const note = (text: string) => {
    notes.push(text);
    log.warn(text, undefined, ctx.sessionId);
  };
  for (const r of records) {
    returnedTokens += Number(r.tokens);
    const label = memoryLabel(r);
    if (r.status === RecordStatus.PENDING) {
      note(`memory record "${r.id}" from "${p.name}" is a pending draft; ordinary recall never shows it`);
      dropped.push(label);
    } else if (r.scope === MemoryScope.SESSION && !sessionTree.has(r.provenance?.sourceSessionId ?? "")) {
      note(`memory record "${r.id}" from "${p.name}" is scoped to another session; left out`);
      dropped.push(label);
    } else if (!r.content.every((b) => b.block.case === "text")) {
      note(`memory record "${r.id}" from "${p.name}" carries non-text content; dropped`);
      dropped.push(label);
    } else kept.push(translateRecord(p.name, r));
  }
  const used = kept.reduce((n, s) => n + Number(s.tokens), 0);
  if (used > budget) {
    note(
      `memory provider "${p.name}" exceeded its budget (${used} > ${budget} tokens); its records are refused`,
    );
    return {
      sections: [],
      budget,
      returnedTokens,
      dropped: [...dropped, ...kept.map((s) => s.label)],
      notes,
    };
  }
  return { sections: kept, budget, returnedTokens, dropped, notes };
}
