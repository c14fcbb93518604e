// The provider's logic over a store: Recall (rank, then fit the budget by the kernel's
// token counts), the write side (slugs made unique with -2, -3, ..., [[name]] links parsed,
// type and scope fixed at creation, provenance stored as given), and the listing path.
// Ranking: relevance to the query (memory.search) or to the files touched so far, else
// a prior per type with recency decay — `project` records decay within weeks, the others
// over months (the one ranking rule the protocol sets).
import type { TokenCounter } from "@pluggableharness/tool-kit";
import {
  isSlug,
  parseLinks,
  type ScopeName,
  type StoredRecord,
  secretKind,
  similarity,
  slugify,
  type TypeName,
  terms,
  uniqueSlug,
} from "./record.ts";
import type { MemoryStore, Roots } from "./store.ts";

export class MemoryFailure extends Error {
  readonly category: "not_found" | "invalid_type" | "invalid_scope" | "invalid_argument" | "secret";
  constructor(category: MemoryFailure["category"], message: string) {
    super(message);
    this.category = category;
  }
}

const DAY_MS = 86_400_000;
/** Candidates counted per recall, best first. */
const MAX_COUNTED = 64;
/** Below this much room left, no record is worth counting. */
const MIN_ROOM_TOKENS = 8;
const HALF_LIFE_DAYS: Record<TypeName, number> = { user: 365, feedback: 180, reference: 180, project: 14 };
const TYPE_PRIOR: Record<TypeName, number> = { user: 0.9, feedback: 0.85, reference: 0.6, project: 0.7 };

export interface RecallQuery {
  readonly sessionId: string;
  /** The session's ancestors (a sub-agent's tree), whose session-scoped records it sees. */
  readonly ancestors?: readonly string[];
  readonly budget: number;
  readonly query?: string;
  readonly filesTouched: readonly string[];
  readonly types: readonly TypeName[];
  readonly scopes: readonly ScopeName[];
  readonly includePending: boolean;
  /** Upper bound on records returned (memory.search's limit). */
  readonly limit?: number;
  readonly now: number;
}

export interface Recalled {
  readonly record: StoredRecord;
  readonly tokens: number;
  readonly score: number;
}

export interface WriteInput {
  readonly type: TypeName;
  readonly scope: ScopeName;
  readonly id?: string;
  readonly title: string;
  readonly content: string;
  readonly provenance: StoredRecord["provenance"];
  /** "pending": a draft recall skips until it is confirmed (the autonomous path). */
  readonly status?: StoredRecord["status"];
  /** The [[links]] as the kernel parsed them (the RPC path); absent: parsed here. */
  readonly links?: string[];
}

/**
 * Whether a session may see a record: session-scoped ones only in the session that wrote
 * them and its descendants (`tree`: the session and its ancestors).
 */
export function visibleTo(r: StoredRecord, tree: readonly string[]): boolean {
  return r.scope !== "session" || tree.includes(r.provenance.sourceSessionId);
}

/** The refusal for a text that holds a credential (never quoting it). */
export function refuseSecrets(...texts: string[]): void {
  for (const t of texts) {
    const kind = secretKind(t);
    if (kind) {
      throw new MemoryFailure(
        "secret",
        `refused: the record appears to contain ${kind}; memory never stores secrets (write where the secret lives instead, e.g. "the key is in the ANTHROPIC_API_KEY variable")`,
      );
    }
  }
}

export class Memory {
  readonly store: MemoryStore;
  readonly types: readonly TypeName[];
  readonly scopes: readonly ScopeName[];

  constructor(store: MemoryStore, types: readonly TypeName[], scopes: readonly ScopeName[]) {
    this.store = store;
    this.types = types;
    this.scopes = scopes;
  }

  async recall(roots: Roots, q: RecallQuery, count: TokenCounter): Promise<Recalled[]> {
    const types = q.types.length > 0 ? q.types : this.types;
    const scopes = q.scopes.length > 0 ? q.scopes : this.scopes;
    const candidates = this.store.list(roots).filter(
      (r) =>
        types.includes(r.type) &&
        scopes.includes(r.scope) &&
        visibleTo(r, [q.sessionId, ...(q.ancestors ?? [])]) &&
        (q.includePending || r.status === "canonical") &&
        // A credential written into a file by hand is not read back into a prompt.
        secretKind(`${r.title}\n${r.content}`) === undefined,
    );
    const query = q.query ?? "";
    const wanted = terms(query || q.filesTouched.join(" "));
    const fts = query && this.store.search ? this.store.search(roots, query) : undefined;
    const scored = candidates
      .map((r) => ({ r, match: fts ? (fts.get(r.id) ?? 0) : termMatch(r, wanted) }))
      // An explicit search returns matches only; the passive pass shows the best records anyway.
      .filter((x) => !query || x.match > 0)
      .map(({ r, match }) => {
        const ageDays = Math.max(0, (q.now - Date.parse(r.updatedAt)) / DAY_MS) || 0;
        const prior = TYPE_PRIOR[r.type] * 0.5 ** (ageDays / HALF_LIFE_DAYS[r.type]);
        const score = wanted.length > 0 ? 0.6 * match + 0.4 * prior : prior;
        return { r, score: Math.max(0, Math.min(1, score)) };
      })
      .sort(
        (a, b) =>
          b.score - a.score || b.r.updatedAt.localeCompare(a.r.updatedAt) || a.r.id.localeCompare(b.r.id),
      );
    // Counting goes through the kernel (a callback per record): only the best MAX_COUNTED
    // candidates are counted, all at once, then taken best first while they fit.
    const top = scored.slice(0, q.limit !== undefined ? Math.min(q.limit * 2, MAX_COUNTED) : MAX_COUNTED);
    const counts = await Promise.all(top.map(({ r }) => count(r.content)));
    const out: Recalled[] = [];
    let used = 0;
    for (const [i, { r, score }] of top.entries()) {
      if (q.limit !== undefined && out.length >= q.limit) break;
      if (q.budget - used < MIN_ROOM_TOKENS) break;
      const tokens = counts[i]!;
      if (used + tokens > q.budget) continue; // a smaller, lower-ranked record may still fit
      used += tokens;
      out.push({ record: r, tokens, score });
    }
    return out;
  }

  /** Creates a record; the id is the suggestion (or a slug of the title) made unique. */
  record(roots: Roots, w: WriteInput, now: string): StoredRecord {
    this.#checkTaxonomy(w.type, w.scope);
    refuseSecrets(w.title, w.content, w.id ?? "");
    if (w.content.trim() === "") throw new MemoryFailure("invalid_argument", "content is empty");
    if (w.id !== undefined && !isSlug(w.id))
      throw new MemoryFailure(
        "invalid_argument",
        `id "${w.id}" is not a slug (lower-case words joined by dashes)`,
      );
    const existing = new Set(this.store.list(roots).map((r) => r.id));
    const id = uniqueSlug(w.id ?? slugify(w.title || w.content.slice(0, 60)), (x) => existing.has(x));
    const record: StoredRecord = {
      id,
      type: w.type,
      scope: w.scope,
      title: w.title.trim() || id,
      content: w.content.trim(),
      status: w.status ?? "canonical",
      // The kernel parses links on its write path (RecordRequest.links); a local write
      // (no kernel to ask) parses them the same way.
      links: w.links ?? parseLinks(w.content),
      createdAt: now,
      updatedAt: now,
      provenance: w.provenance,
    };
    this.store.put(roots, record);
    return record;
  }

  /**
   * Replaces content (and title, when given) wholesale; type, scope and provenance stay.
   * Writing a pending draft confirms it: the record becomes canonical.
   */
  update(
    roots: Roots,
    id: string,
    content: string,
    title: string | undefined,
    now: string,
    links?: string[],
  ): StoredRecord {
    const old = this.store.get(roots, id);
    if (!old) throw new MemoryFailure("not_found", `no memory record "${id}"`);
    refuseSecrets(title ?? "", content);
    if (content.trim() === "") throw new MemoryFailure("invalid_argument", "content is empty");
    const record: StoredRecord = {
      ...old,
      title: title?.trim() || old.title,
      content: content.trim(),
      status: "canonical",
      links: links ?? parseLinks(content),
      updatedAt: now,
    };
    this.store.put(roots, record);
    return record;
  }

  /** ApproveRecord: a pending draft becomes canonical (a canonical one stays as it is). */
  approve(roots: Roots, id: string, now: string): StoredRecord {
    const old = this.get(roots, id);
    if (old.status === "canonical") return old;
    refuseSecrets(old.title, old.content);
    const record: StoredRecord = { ...old, status: "canonical", updatedAt: now };
    this.store.put(roots, record);
    return record;
  }

  delete(roots: Roots, id: string): void {
    if (!this.store.remove(roots, id)) throw new MemoryFailure("not_found", `no memory record "${id}"`);
  }

  get(roots: Roots, id: string): StoredRecord {
    const r = this.store.get(roots, id);
    if (!r) throw new MemoryFailure("not_found", `no memory record "${id}"`);
    return r;
  }

  /** Records of the same type and scope whose id or title is close to the proposed one. */
  nearMatches(roots: Roots, type: TypeName, scope: ScopeName, id: string, title: string): StoredRecord[] {
    return this.store
      .list(roots)
      .filter((r) => r.type === type && r.scope === scope && r.id !== id)
      .map((r) => ({ r, s: Math.max(similarity(r.id, id), similarity(r.title, title)) }))
      .filter((x) => x.s >= 0.6)
      .sort((a, b) => b.s - a.s)
      .slice(0, 5)
      .map((x) => x.r);
  }

  #checkTaxonomy(type: TypeName, scope: ScopeName): void {
    if (!this.types.includes(type))
      throw new MemoryFailure(
        "invalid_type",
        `memory type "${type}" is not one this provider stores (${this.types.join(", ")})`,
      );
    if (!this.scopes.includes(scope))
      throw new MemoryFailure(
        "invalid_scope",
        `memory scope "${scope}" is not one this provider stores (${this.scopes.join(", ")})`,
      );
  }
}

/** Fraction of `wanted` terms found in the record's id, title or content. */
function termMatch(r: StoredRecord, wanted: readonly string[]): number {
  if (wanted.length === 0) return 0;
  const hay = `${r.id} ${r.title} ${r.content}`.toLowerCase();
  return wanted.filter((t) => hay.includes(t)).length / wanted.length;
}
