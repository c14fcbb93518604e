// KernelCallbackService.WriteMemory: a memory provider's own writes (its memory.remember /
// memory.forget tools) made through the kernel, so the kernel's write rules hold for every
// provider: unique slugs and parsed [[links]] (memory/links.ts), and a session event for
// each change. The kernel calls the provider's own MemoryService back to do the write.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { StatusError } from "@pluggableharness/goplugin";
import type { WriteMemoryRequest, WriteMemoryResponseSchema } from "@pluggableharness/protocol/kernel";
import { RecordStatus } from "@pluggableharness/protocol/memory";
import type { CallbackPeer } from "@pluggableharness/runtime";
import { MemoryAudit, MemoryAuditError, type MemoryEventSink, memorySources } from "../memory/audit.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { ProviderCallError } from "../providers/ports.ts";
import type { InvocationTracker } from "./invocations.ts";

// gRPC status codes, by grpc-js's own names.
const { INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION } = status;

export interface MemoryWriteDeps {
  readonly tracker: InvocationTracker;
  readonly providers: () => ProviderRegistry | undefined;
  /** The sink recording changes into a live session; undefined when the session is not live. */
  readonly sink: (sessionId: string, origin: string) => MemoryEventSink | undefined;
}

/** Provider call failures and audit refusals as the callback's status codes. */
export function memoryStatus(err: unknown): never {
  if (err instanceof MemoryAuditError) {
    const code = { not_found: NOT_FOUND, invalid: INVALID_ARGUMENT, ambiguous: INVALID_ARGUMENT }[
      err.reason as "not_found" | "invalid" | "ambiguous"
    ];
    throw new StatusError(code ?? FAILED_PRECONDITION, err.message);
  }
  if (err instanceof ProviderCallError) throw new StatusError(err.code, err.details);
  throw err;
}

export async function writeMemory(
  deps: MemoryWriteDeps,
  peer: CallbackPeer,
  req: WriteMemoryRequest,
): Promise<MessageInitShape<typeof WriteMemoryResponseSchema>> {
  const provider = deps.providers()?.get(peer.plugin);
  if (!provider?.memory)
    throw new StatusError(PERMISSION_DENIED, `plugin "${peer.plugin}" is not a loaded memory provider`);
  if (!req.sessionId || deps.tracker.categoryFor(peer.plugin, req.sessionId) === undefined)
    throw new StatusError(
      PERMISSION_DENIED,
      `plugin "${peer.plugin}" is not serving a call for session ${req.sessionId || "(none)"}; WriteMemory writes only for the session it serves`,
    );
  if (!req.workingDirectory)
    throw new StatusError(INVALID_ARGUMENT, "WriteMemoryRequest.working_directory is required");
  const audit = new MemoryAudit(() =>
    memorySources(deps.providers()).filter((s) => s.name === provider.name),
  );
  const call = { sessionId: req.sessionId, workingDirectory: req.workingDirectory };
  const sink = deps.sink(req.sessionId, req.origin || peer.plugin);
  const op = req.operation;
  try {
    switch (op.case) {
      case "record": {
        const r = op.value;
        const content = r.content.map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\n");
        const e = await audit.record(
          call,
          provider.name,
          {
            type: r.type,
            scope: r.scope,
            ...(r.id ? { id: r.id } : {}),
            title: r.title,
            content,
            recordedBy: req.origin || peer.plugin,
            ...(req.turnId ? { turnId: req.turnId } : {}),
            ...(r.status === RecordStatus.PENDING ? { pending: true } : {}),
          },
          sink,
        );
        return { record: e.record };
      }
      case "update": {
        const u = op.value;
        const content = u.content.map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\n");
        const e = await audit.update(call, provider.name, u.id, content, u.title, sink);
        return { record: e.record };
      }
      case "delete": {
        const e = await audit.forget(call, op.value.id, provider.name, sink);
        return { record: e.record };
      }
      default:
        throw new StatusError(INVALID_ARGUMENT, "WriteMemoryRequest names no operation");
    }
  } catch (err) {
    if (err instanceof StatusError) throw err;
    memoryStatus(err);
  }
}
