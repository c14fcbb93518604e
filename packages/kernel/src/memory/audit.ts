// The kernel's own path to the memory providers' records, the one the operator audits
// through (`agent memory ...`, `/memory ...`) and the one the kernel writes through:
// list, show, approve, reject, forget, record and update over each provider's
// MemoryService port. Writes get the kernel's slug and link rules (links.ts) whatever
// provider serves them; every change is handed to a sink, which records it as a
// memory_write / memory_update / memory_delete event when a session is involved.
import { create } from "@bufbuild/protobuf";
import { CodedError } from "@pluggableharness/protocol/coded-error";
import { CallContextSchema } from "@pluggableharness/protocol/common";
import { type MemoryMutationEvent, MemoryMutationEventSchema } from "@pluggableharness/protocol/event";
import { type MemoryRecord, MemoryScope, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import type { RenderNode } from "@pluggableharness/protocol/render";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { type MemoryProvider, ProviderCallError } from "../providers/ports.ts";
import { isMemorySlug, memoryContentNode, memorySlug, parseMemoryLinks, uniqueMemorySlug } from "./links.ts";

const NOT_FOUND = 5;
const PAGE = 200;
/** Records a listing reads from one provider at most (an audit, not an export). */
const LIST_LIMIT = 2_000;

/** A loaded memory provider as the audit reaches it. */
export interface MemorySource {
  readonly name: string;
  readonly port: MemoryProvider;
  readonly ratification: boolean;
}

/** The loaded memory providers, in declaration order. */
export function memorySources(registry: ProviderRegistry | undefined): MemorySource[] {
  return (registry?.all() ?? [])
    .filter((p) => p.memory !== undefined)
    .map((p) => ({ name: p.name, port: p.ports.memory, ratification: !!p.memory?.ratificationSupported }));
}

/** Where the call comes from: the session (if any) and the directory that decides the project. */
export interface MemoryCall {
  readonly sessionId?: string;
  readonly workingDirectory: string;
}

export type MemoryEventKind = "memory_write" | "memory_update" | "memory_delete";
/** Receives each change once it is made (to record it in a session). */
export type MemoryEventSink = (kind: MemoryEventKind, event: MemoryMutationEvent) => void;

export interface MemoryEntry {
  readonly provider: string;
  readonly record: MemoryRecord;
  /** The record's content with its [[links]] as link nodes. */
  readonly content: RenderNode;
}

export type MemoryAuditReason = "not_found" | "invalid" | "unsupported" | "ambiguous" | "no_provider";

export class MemoryAuditError extends CodedError<MemoryAuditReason> {
  override readonly name = "MemoryAuditError";
  /** The memory commands read the code as the reason. */
  get reason(): MemoryAuditReason {
    return this.code;
  }
}

export const recordText = (r: MemoryRecord): string =>
  r.content.map((b) => (b.block.case === "text" ? b.block.value.text : "[non-text content]")).join("\n");

const typeName = (r: MemoryRecord) => (MemoryType[r.type] ?? "unspecified").toLowerCase();

function entry(provider: string, record: MemoryRecord): MemoryEntry {
  return { provider, record, content: memoryContentNode(recordText(record)) };
}

const isNotFound = (err: unknown) => err instanceof ProviderCallError && err.code === NOT_FOUND;

export class MemoryAudit {
  readonly #sources: () => readonly MemorySource[];
  readonly #timeoutMs: number;

  constructor(sources: () => readonly MemorySource[], timeoutMs = 15_000) {
    this.#sources = sources;
    this.#timeoutMs = timeoutMs;
  }

  #opts() {
    return { timeoutMs: this.#timeoutMs };
  }

  #context(call: MemoryCall) {
    return create(CallContextSchema, {
      sessionId: call.sessionId ?? "",
      workingDirectory: call.workingDirectory,
    });
  }

  /** The named provider, or every loaded one. */
  #pick(provider: string | undefined): readonly MemorySource[] {
    const all = this.#sources();
    if (all.length === 0)
      throw new MemoryAuditError(
        "no_provider",
        'no memory provider is loaded (declare one in agent.hcl, e.g. provider "memory" {})',
      );
    if (!provider) return all;
    const one = all.find((s) => s.name === provider);
    if (!one)
      throw new MemoryAuditError(
        "no_provider",
        `no memory provider "${provider}" is loaded (loaded: ${all.map((s) => s.name).join(", ")})`,
      );
    return [one];
  }

  async #get(call: MemoryCall, source: MemorySource, id: string): Promise<MemoryRecord | undefined> {
    try {
      const res = await source.port.getRecord({ id, callContext: this.#context(call) }, this.#opts());
      return res.record;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The one record `id` names, in `provider` or in whichever loaded provider holds it. */
  async #find(call: MemoryCall, named: string, given: string | undefined) {
    if (!named) throw new MemoryAuditError("invalid", "name the record: its id, as `list` shows it");
    // "provider/id", as a listing of several providers writes it (slugs have no slash).
    const slash = named.indexOf("/");
    const id = slash > 0 && !given ? named.slice(slash + 1) : named;
    const provider = slash > 0 && !given ? named.slice(0, slash) : given;
    const found: { source: MemorySource; record: MemoryRecord }[] = [];
    for (const source of this.#pick(provider)) {
      const record = await this.#get(call, source, id);
      if (record) found.push({ source, record });
    }
    if (found.length === 0)
      throw new MemoryAuditError(
        "not_found",
        `no memory record "${id}"${provider ? ` in "${provider}"` : ""}`,
      );
    if (found.length > 1)
      throw new MemoryAuditError(
        "ambiguous",
        `"${id}" is a record of ${found.map((f) => f.source.name).join(" and ")}: name the provider`,
      );
    return { ...found[0]!, id };
  }

  async list(
    call: MemoryCall,
    options: { provider?: string; pendingOnly?: boolean } = {},
  ): Promise<MemoryEntry[]> {
    const out: MemoryEntry[] = [];
    for (const source of this.#pick(options.provider)) {
      const mine = await this.#records(call, source, !!options.pendingOnly);
      // Drafts first (they are what an audit is for), then the most recently changed.
      const time = (r: MemoryRecord) => Number(r.updatedAt?.seconds ?? r.createdAt?.seconds ?? 0n);
      mine.sort(
        (a, b) =>
          Number(b.status === RecordStatus.PENDING) - Number(a.status === RecordStatus.PENDING) ||
          time(b) - time(a) ||
          a.id.localeCompare(b.id),
      );
      out.push(...mine.map((r) => entry(source.name, r)));
    }
    return out;
  }

  /** Every record of one provider (up to LIST_LIMIT), page by page. */
  async #records(call: MemoryCall, source: MemorySource, pendingOnly: boolean): Promise<MemoryRecord[]> {
    const mine: MemoryRecord[] = [];
    let pageToken = "";
    do {
      const res = await source.port.listRecords(
        {
          pageSize: PAGE,
          pageToken,
          callContext: this.#context(call),
          ...(pendingOnly ? { statusFilter: RecordStatus.PENDING } : {}),
        },
        this.#opts(),
      );
      mine.push(...res.records);
      pageToken = res.nextPageToken;
    } while (pageToken && mine.length < LIST_LIMIT);
    return mine;
  }

  async show(call: MemoryCall, named: string, provider?: string): Promise<MemoryEntry> {
    const { source, record } = await this.#find(call, named, provider);
    return entry(source.name, record);
  }

  /** A pending draft becomes canonical. */
  async approve(call: MemoryCall, named: string, provider?: string, sink?: MemoryEventSink) {
    const { source, record, id } = await this.#find(call, named, provider);
    if (record.status !== RecordStatus.PENDING)
      throw new MemoryAuditError("invalid", `"${id}" is not a pending draft: it is already in use`);
    if (!source.ratification)
      throw new MemoryAuditError("unsupported", `"${source.name}" does not support approving drafts`);
    await source.port.approveRecord({ id, callContext: this.#context(call) }, this.#opts());
    const now = (await this.#get(call, source, id)) ?? { ...record, status: RecordStatus.CANONICAL };
    sink?.("memory_update", mutation(source.name, now));
    return entry(source.name, now);
  }

  /** A pending draft is discarded. */
  async reject(call: MemoryCall, named: string, provider?: string, sink?: MemoryEventSink) {
    const { source, record, id } = await this.#find(call, named, provider);
    if (record.status !== RecordStatus.PENDING)
      throw new MemoryAuditError(
        "invalid",
        `"${id}" is not a pending draft; to delete a record in use, forget it`,
      );
    if (!source.ratification)
      throw new MemoryAuditError("unsupported", `"${source.name}" does not support rejecting drafts`);
    await source.port.rejectRecord({ id, callContext: this.#context(call) }, this.#opts());
    sink?.("memory_delete", mutation(source.name, record));
    return entry(source.name, record);
  }

  /** Any record is deleted. */
  async forget(call: MemoryCall, named: string, provider?: string, sink?: MemoryEventSink) {
    const { source, record, id } = await this.#find(call, named, provider);
    await source.port.deleteRecord({ id, callContext: this.#context(call) }, this.#opts());
    sink?.("memory_delete", mutation(source.name, record));
    return entry(source.name, record);
  }

  /**
   * Record through the kernel: the id (given, else the title's slug) is made a slug and
   * unique within the provider (`-2`, `-3`, ...), and `links` are parsed from the text.
   */
  async record(
    call: MemoryCall,
    provider: string,
    req: {
      type: MemoryRecord["type"];
      scope: MemoryRecord["scope"];
      id?: string;
      title: string;
      content: string;
      recordedBy: string;
      turnId?: string;
      /** A draft awaiting approval (ratification providers only). */
      pending?: boolean;
    },
    sink?: MemoryEventSink,
  ): Promise<MemoryEntry> {
    const source = this.#pick(provider)[0]!;
    if (req.pending && !source.ratification)
      throw new MemoryAuditError("unsupported", `"${source.name}" does not support drafts awaiting approval`);
    const base = req.id && isMemorySlug(req.id) ? req.id : memorySlug(req.id || req.title);
    // The provider's ids, listed once (a probe per candidate would be a not_found each).
    const taken = new Set((await this.#records(call, source, false)).map((r) => r.id));
    const id = await uniqueMemorySlug(base, async (c) => taken.has(c));
    const links = parseMemoryLinks(req.content);
    const res = await source.port.record(
      {
        type: req.type,
        scope: req.scope,
        id,
        title: req.title,
        content: [{ block: { case: "text", value: { text: req.content } } }],
        links,
        provenance: {
          sourceSessionId: call.sessionId ?? "",
          ...(req.turnId ? { sourceTurnId: req.turnId } : {}),
          recordedBy: req.recordedBy,
        },
        callContext: this.#context(call),
        ...(req.pending ? { status: RecordStatus.PENDING } : {}),
      },
      this.#opts(),
    );
    const stored = (await this.#get(call, source, res.result?.id || id)) ?? undefined;
    if (!stored) throw new MemoryAuditError("not_found", `"${source.name}" did not keep record "${id}"`);
    sink?.("memory_write", mutation(source.name, stored));
    return entry(source.name, stored);
  }

  /** Content replaced wholesale, with its links parsed again. */
  async update(
    call: MemoryCall,
    provider: string,
    id: string,
    content: string,
    title?: string,
    sink?: MemoryEventSink,
  ): Promise<MemoryEntry> {
    const { source } = await this.#find(call, id, provider);
    await source.port.updateRecord(
      {
        id,
        ...(title !== undefined ? { title } : {}),
        content: [{ block: { case: "text", value: { text: content } } }],
        links: parseMemoryLinks(content),
        callContext: this.#context(call),
      },
      this.#opts(),
    );
    const now = await this.#get(call, source, id);
    if (!now) throw new MemoryAuditError("not_found", `no memory record "${id}" after the update`);
    sink?.("memory_update", mutation(source.name, now));
    return entry(source.name, now);
  }
}

function mutation(provider: string, record: MemoryRecord): MemoryMutationEvent {
  return create(MemoryMutationEventSchema, { record, provider });
}

/** One line per record for a listing: id, status, type/scope, title. */
export function entryLine(e: MemoryEntry, showProvider: boolean): string {
  const r = e.record;
  const status = r.status === RecordStatus.PENDING ? "pending" : "in use";
  const scope = (MemoryScope[r.scope] ?? "unspecified").toLowerCase();
  return `${showProvider ? `${e.provider}/` : ""}${r.id}  [${status}, ${typeName(r)}, ${scope}]  ${r.title}`;
}
