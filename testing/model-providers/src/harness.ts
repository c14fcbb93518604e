// Helpers for tests of model providers over the real plugin boundary: launch the provider
// through the runtime host (as the kernel does), collect what a completion streams, and fold
// it with the kernel's own accumulator. Shared by every first-party model provider's tests.
import { fileURLToPath } from "node:url";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type AccumulatedCompletion, StreamAccumulator } from "@pluggableharness/kernel/domain";
import {
  ModelErrorCategory,
  ModelService,
  type ModelSpec,
  type StreamCompletionRequestSchema,
  type StreamEvent,
} from "@pluggableharness/protocol/model";
import { PluginHost, type PluginLogRecord } from "@pluggableharness/runtime";

const clientOf = (host: PluginHost) => host.client(ModelService);
export type Client = ReturnType<typeof clientOf>;
export type RequestInit = MessageInitShape<typeof StreamCompletionRequestSchema>;

export interface Launched {
  host: PluginHost;
  client: Client;
  logs: PluginLogRecord[];
}

export async function launch(name: string, main: URL): Promise<Launched> {
  const logs: PluginLogRecord[] = [];
  const host = new PluginHost({
    name,
    command: fileURLToPath(main),
    launchTimeoutMs: 20_000,
    logSink: (r) => logs.push(r),
  });
  await host.start();
  return { host, client: clientOf(host), logs };
}

/** Every event of one completion; a failed or cancelled call resolves with what arrived. */
export async function collect(
  client: Client,
  request: RequestInit,
  signal?: AbortSignal,
): Promise<{ events: StreamEvent[]; error?: unknown }> {
  const events: StreamEvent[] = [];
  try {
    for await (const e of client.streamCompletion(request, signal ? { signal } : {})) events.push(e);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

export const cases = (events: readonly StreamEvent[]) => events.map((e) => e.event.case ?? "none");

export function only<K extends NonNullable<StreamEvent["event"]["case"]>>(
  events: readonly StreamEvent[],
  kind: K,
): Array<Extract<StreamEvent["event"], { case: K }>["value"]> {
  return events.flatMap((e) => (e.event.case === kind ? [e.event.value as never] : []));
}

/** The concatenated text deltas. */
export const textOf = (events: readonly StreamEvent[]) =>
  only(events, "textDelta")
    .map((t) => t.text)
    .join("");

/** The single error event, with its category name. */
export function errorOf(events: readonly StreamEvent[]) {
  const e = only(events, "error")[0];
  return e ? { ...e, categoryName: ModelErrorCategory[e.category] } : undefined;
}

/** The kernel's accumulator over a completion, as the kernel would persist it. */
export function accumulate(
  events: readonly StreamEvent[],
  model: ModelSpec,
  provider: string,
  receivedAt = "2026-09-01T00:00:00Z",
): AccumulatedCompletion {
  let n = 0;
  const acc = new StreamAccumulator({
    provider,
    model,
    clock: () => timestampFromMs(Date.parse(receivedAt)),
    newMessageId: () => `01MSG${String(++n).padStart(21, "0")}`,
  });
  for (const e of events) acc.push(e);
  return acc.finish();
}

export const utf8 = (s: string) => new TextEncoder().encode(s);
export const str = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
export const text = (t: string) => ({ block: { case: "text" as const, value: { text: t } } });
export const toolResult = (toolUseId: string, t: string, isError = false) => ({
  block: { case: "toolResult" as const, value: { toolUseId, isError, content: [text(t)] } },
});
