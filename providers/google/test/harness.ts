// Launches the provider as a real plugin process through the runtime host and collects
// what it streams and logs.
import { fileURLToPath } from "node:url";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type AccumulatedCompletion, StreamAccumulator } from "@pluggableharness/kernel/domain";
import {
  ModelService,
  type ModelSpec,
  type StreamCompletionRequestSchema,
  type StreamEvent,
} from "@pluggableharness/protocol/model";
import { PluginHost, type PluginLogRecord } from "@pluggableharness/runtime";

function modelClient(host: PluginHost) {
  return host.client(ModelService);
}

export async function launch(
  name: string,
  main: URL,
): Promise<{ host: PluginHost; client: ReturnType<typeof modelClient>; logs: PluginLogRecord[] }> {
  const logs: PluginLogRecord[] = [];
  const host = new PluginHost({
    name,
    command: fileURLToPath(main),
    launchTimeoutMs: 20_000,
    logSink: (r) => logs.push(r),
  });
  await host.start();
  return { host, client: modelClient(host), logs };
}

export type RequestInit = MessageInitShape<typeof StreamCompletionRequestSchema>;

/** Every event of one completion; a cancelled call resolves with what arrived. */
export async function collect(
  client: ReturnType<typeof modelClient>,
  request: RequestInit,
  options: { signal?: AbortSignal } = {},
): Promise<{ events: StreamEvent[]; error?: unknown }> {
  const events: StreamEvent[] = [];
  try {
    for await (const e of client.streamCompletion(request, options)) events.push(e);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

export function cases(events: readonly StreamEvent[]): string[] {
  return events.map((e) => e.event.case ?? "none");
}

export function only<K extends NonNullable<StreamEvent["event"]["case"]>>(
  events: readonly StreamEvent[],
  kind: K,
): Array<Extract<StreamEvent["event"], { case: K }>["value"]> {
  return events.flatMap((e) => (e.event.case === kind ? [e.event.value as never] : []));
}

export function accumulate(
  events: readonly StreamEvent[],
  model: ModelSpec,
  provider: string,
): AccumulatedCompletion {
  let n = 0;
  const acc = new StreamAccumulator({
    provider,
    model,
    clock: () => timestampFromMs(Date.parse("2026-06-01T00:00:00Z")),
    newMessageId: () => `01MSG${String(++n).padStart(21, "0")}`,
  });
  for (const e of events) acc.push(e);
  return acc.finish();
}

export const utf8 = (s: string) => new TextEncoder().encode(s);
export const str = (b: Uint8Array) => new TextDecoder().decode(b);
export const text = (t: string) => ({ block: { case: "text" as const, value: { text: t } } });
