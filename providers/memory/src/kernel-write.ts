// Writes made through the kernel (KernelCallbackService.WriteMemory) rather than straight
// into the store: the kernel gives the id its unique slug, parses the [[links]], calls this
// provider's own MemoryService back, and records the change in the session. Used by the
// tools and by the autonomous path's drafts.
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import type { RecordStatus } from "@pluggableharness/protocol/memory";
import { type ToolContext, ToolFailure } from "@pluggableharness/tool-kit";
import type { ScopeName, TypeName } from "./record.ts";

/** Who is writing, for which session and project. */
export interface WriteContext {
  readonly kernel: KernelClient;
  readonly sessionId: string | undefined;
  readonly turnId?: string | undefined;
  readonly workingDirectory: string | undefined;
  readonly signal?: AbortSignal;
}

export const fromTool = (ctx: ToolContext): WriteContext => ({
  kernel: ctx.kernel,
  sessionId: ctx.sessionId,
  turnId: ctx.callContext?.turnId,
  workingDirectory: ctx.workingDirectory,
  signal: ctx.signal,
});

const UNIMPLEMENTED = 12;
const codeOf = (err: unknown) => (err as { code?: number }).code;
const messageOf = (err: unknown) => (err as { details?: string }).details || (err as Error).message;

export type WriteOperation =
  | {
      case: "record";
      value: {
        type: number;
        scope: number;
        id?: string;
        title: string;
        content: { block: { case: "text"; value: { text: string } } }[];
        /** RecordStatus.PENDING: a draft awaiting approval. */
        status?: RecordStatus;
      };
    }
  | {
      case: "update";
      value: { id: string; title?: string; content: { block: { case: "text"; value: { text: string } } }[] };
    }
  | { case: "delete"; value: { id: string } };

export const TYPE_NUMBER: Record<TypeName, number> = { user: 1, feedback: 2, project: 3, reference: 4 };
export const SCOPE_NUMBER: Record<ScopeName, number> = { session: 1, project: 2, global: 3 };
export const textBlocks = (text: string) => [{ block: { case: "text" as const, value: { text } } }];

/**
 * The write made through the kernel (KernelCallbackService.WriteMemory), which gives the
 * id its unique slug, parses the [[links]], calls this provider's own MemoryService back
 * and records the change in the session. Undefined when there is no kernel to ask (no
 * session, or a kernel without the callback): the caller then writes locally.
 */
export async function writeThroughKernel(
  ctx: WriteContext,
  origin: string,
  operation: WriteOperation,
): Promise<{ id: string } | undefined> {
  if (!ctx.sessionId || !ctx.workingDirectory) return undefined;
  let kernel: Awaited<ReturnType<KernelClient["service"]>>;
  try {
    kernel = await ctx.kernel.service();
  } catch {
    return undefined;
  }
  try {
    const res = await kernel.writeMemory(
      {
        sessionId: ctx.sessionId,
        turnId: ctx.turnId ?? "",
        workingDirectory: ctx.workingDirectory,
        origin,
        operation: operation as never,
      },
      ctx.signal ? { signal: ctx.signal } : {},
    );
    return { id: res.record?.id ?? "" };
  } catch (err) {
    const code = codeOf(err);
    if (code === UNIMPLEMENTED) return undefined;
    if (code === 5) throw new ToolFailure("not_found", messageOf(err));
    if (code === 3) throw new ToolFailure("invalid_arguments", messageOf(err));
    throw new ToolFailure("execution_failed", messageOf(err));
  }
}
