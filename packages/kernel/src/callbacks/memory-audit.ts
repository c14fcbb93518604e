// ControlSession's memory operation: the operator's /memory list|show|approve|reject|forget
// for the session being served. Approve, reject and forget are recorded in that session
// (origin "/memory"); a model never reaches this path (control.ts refuses anything but an
// operator's own command).
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type ControlSessionRequest_MemoryAudit,
  MemoryAuditAction,
  type MemoryAuditResultSchema,
} from "@pluggableharness/protocol/kernel";
import { RecordStatus } from "@pluggableharness/protocol/memory";
import type { Session } from "../loop/session/session.ts";
import {
  entryLine,
  MemoryAudit,
  MemoryAuditError,
  type MemoryEntry,
  memorySources,
} from "../memory/audit.ts";
import { sessionMemorySink } from "../memory/session-events.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { memoryStatus } from "./memory-write.ts";

type Result = MessageInitShape<typeof MemoryAuditResultSchema>;

const shown = (e: MemoryEntry) => ({ provider: e.provider, record: e.record, content: e.content });

export async function memoryAudit(
  session: Session,
  providers: ProviderRegistry | undefined,
  req: ControlSessionRequest_MemoryAudit,
): Promise<Result> {
  const audit = new MemoryAudit(() => memorySources(providers));
  const call = { sessionId: session.id, workingDirectory: session.workingDirectory };
  const provider = req.provider || undefined;
  const sink = sessionMemorySink(session, "/memory");
  try {
    switch (req.action) {
      case MemoryAuditAction.LIST: {
        const entries = await audit.list(call, {
          ...(provider ? { provider } : {}),
          pendingOnly: req.pendingOnly,
        });
        const many = new Set(entries.map((e) => e.provider)).size > 1;
        const pending = entries.filter((e) => e.record.status === RecordStatus.PENDING).length;
        return {
          entries: entries.map(shown),
          summary:
            entries.length === 0
              ? req.pendingOnly
                ? "No memory drafts await approval."
                : "Memory holds no records."
              : `${entries.length} record${entries.length === 1 ? "" : "s"}${pending ? `, ${pending} pending approval` : ""}:\n${entries.map((e) => entryLine(e, many)).join("\n")}`,
        };
      }
      case MemoryAuditAction.SHOW: {
        const e = await audit.show(call, req.id, provider);
        return { entries: [shown(e)], summary: entryLine(e, false) };
      }
      case MemoryAuditAction.APPROVE: {
        const e = await audit.approve(call, req.id, provider, sink);
        return { entries: [shown(e)], summary: `Approved memory "${e.record.id}": recall now uses it.` };
      }
      case MemoryAuditAction.REJECT: {
        const e = await audit.reject(call, req.id, provider, sink);
        return { entries: [shown(e)], summary: `Rejected the memory draft "${e.record.id}": it is gone.` };
      }
      case MemoryAuditAction.FORGET: {
        const e = await audit.forget(call, req.id, provider, sink);
        return { entries: [shown(e)], summary: `Forgot memory "${e.record.id}".` };
      }
      default:
        throw new MemoryAuditError("invalid", "name a memory action: list, show, approve, reject or forget");
    }
  } catch (err) {
    memoryStatus(err);
  }
}
