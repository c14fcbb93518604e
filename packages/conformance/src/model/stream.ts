// StreamCompletion checks: the event stream's shape (through the kernel's accumulator),
// classified errors, cancellation as normal control flow, token counting and secrets.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  ClassifiedModelError,
  ProtocolViolationError,
  StreamAccumulator,
  usageIssues,
} from "@pluggableharness/kernel/domain";
import { type ContentBlockSchema, Role } from "@pluggableharness/protocol/content";
import {
  type Capabilities,
  ModelErrorCategory,
  ModelService,
  type ModelSpec,
  type StreamEvent,
} from "@pluggableharness/protocol/model";
import { RpcError } from "@pluggableharness/runtime";
import type { CheckContext } from "../runner.ts";
import { SECRET_CANARY } from "./capabilities.ts";

type BlockInit = MessageInitShape<typeof ContentBlockSchema>;

const GRPC_CANCELLED = 1;
const GRPC_UNIMPLEMENTED = 12;

function request(ctx: CheckContext, model: string, content: BlockInit[]) {
  return {
    modelId: model,
    messages: [{ role: Role.USER, id: "01CONFORMANCE0000000000000", content }],
    callContext: {
      sessionId: "01CONFORMANCESESSION000000",
      turnId: "01CONFORMANCETURN000000000",
      workingDirectory: ctx.workingDirectory,
    },
  };
}

const say = (text: string): BlockInit[] => [{ block: { case: "text", value: { text } } }];

async function drain(
  ctx: CheckContext,
  req: ReturnType<typeof request>,
  signal?: AbortSignal,
  onEvent?: (e: StreamEvent) => void,
): Promise<{ events: StreamEvent[]; status?: RpcError; thrown?: unknown }> {
  const events: StreamEvent[] = [];
  try {
    for await (const e of ctx.host.client(ModelService).streamCompletion(req, signal ? { signal } : {})) {
      events.push(e);
      onEvent?.(e);
    }
    return { events };
  } catch (err) {
    return err instanceof RpcError ? { events, status: err } : { events, thrown: err };
  }
}

/** The model the checks exercise: --model, else the first declared one. */
export function pickModel(ctx: CheckContext, caps: Capabilities | undefined): ModelSpec | undefined {
  const models = caps?.models ?? [];
  if (ctx.options.model) return models.find((m) => m.id === ctx.options.model);
  return models[0];
}

function errorProblems(e: StreamEvent): string[] {
  if (e.event.case !== "error") return [];
  const err = e.event.value;
  const p: string[] = [];
  if (err.category === ModelErrorCategory.UNSPECIFIED) p.push("error without a category");
  if (err.category === ModelErrorCategory.PROCESS_CRASHED)
    p.push("a plugin reported process_crashed (kernel-only)");
  if (!err.message) p.push("error without a message");
  return p;
}

/** One plain completion, checked event by event with the kernel's accumulator. */
export async function checkStreamShape(ctx: CheckContext, model: ModelSpec): Promise<void> {
  const { events, status, thrown } = await drain(
    ctx,
    request(ctx, model.id, say("Reply with the single word OK.")),
  );
  if (thrown || status) {
    ctx.record(
      "model.stream.shape",
      "fail",
      `StreamCompletion failed at the RPC level (${status ? status.status : String(thrown)}); failures must be in-band error events`,
    );
    return;
  }
  let n = 0;
  const acc = new StreamAccumulator({
    provider: "conformance",
    model,
    clock: () => timestampFromMs(Date.now()),
    newMessageId: () => `01CONFORMANCEMSG${String(++n).padStart(10, "0")}`,
  });
  const problems: string[] = [];
  try {
    for (const e of events) acc.push(e);
  } catch (err) {
    if (!(err instanceof ProtocolViolationError || err instanceof Error)) throw err;
    problems.push(err.message);
  }
  const first = events.findIndex((e) => e.event.case === "streamStart");
  if (first > 0) problems.push("stream_start is not the first event");
  for (const e of events) {
    problems.push(...errorProblems(e));
    if (e.event.case === "usage") problems.push(...usageIssues(e.event.value));
  }
  const stops = events.filter((e) => e.event.case === "stop").length;
  const errors = events.filter((e) => e.event.case === "error").length;
  if (stops + errors === 0) problems.push("the stream ended without a stop or an error event");
  const last = events.at(-1)?.event.case;
  if (errors > 0 && last !== "error") problems.push("events followed an error");
  if (problems.length) {
    ctx.record("model.stream.shape", "fail", problems.join("; "));
    return;
  }
  if (errors > 0) {
    const e = events.find((x) => x.event.case === "error")!.event.value as never;
    const c = ClassifiedModelError.fromProto(e);
    ctx.record(
      "model.stream.shape",
      "warn",
      `the completion ended in a classified ${c.category} error: ${c.message}`,
    );
    return;
  }
  const usage = events.filter((e) => e.event.case === "usage").length;
  ctx.record(
    "model.stream.shape",
    "pass",
    `${events.length} events (${[...new Set(events.map((e) => e.event.case))].join(", ")}), ${usage} usage report(s)`,
  );
}

/** Unknown models and unsupported content must come back as classified invalid_request errors. */
export async function checkErrorClassification(
  ctx: CheckContext,
  caps: Capabilities | undefined,
): Promise<void> {
  const unknown = await drain(ctx, request(ctx, "conformance-no-such-model", say("hi")));
  const event = unknown.events.find((e) => e.event.case === "error");
  const verdict = (() => {
    if (unknown.status) {
      return unknown.status.code === 3 || unknown.status.code === 5
        ? ["pass", `rejected with gRPC ${unknown.status.status}`]
        : ["fail", `rejected with gRPC ${unknown.status.status} instead of an invalid_request error`];
    }
    if (!event) return ["fail", "an unknown model id produced no error"];
    const e = event.event.value as { category: number };
    return e.category === ModelErrorCategory.INVALID_REQUEST
      ? ["pass", "an unknown model id is an invalid_request error event"]
      : ["fail", `an unknown model id was classified as ${ModelErrorCategory[e.category]}`];
  })();
  ctx.record("model.errors.unknown_model", verdict[0] as "pass" | "fail", verdict[1]!);

  const image = {
    block: {
      case: "image" as const,
      value: { mediaType: "image/png", source: { case: "data" as const, value: PNG_1PX } },
    },
  };
  const doc = {
    block: {
      case: "document" as const,
      value: { mediaType: "application/pdf", data: new TextEncoder().encode("%PDF-1.4\n%%EOF\n") },
    },
  };
  for (const [what, block, flag] of [
    ["image", image, "supportsVision"],
    ["document", doc, "supportsDocuments"],
  ] as const) {
    const id = `model.errors.unsupported_${what}`;
    const target = (caps?.models ?? []).find((m) => !m[flag]);
    if (!target) {
      ctx.record(id, "skip", `every model accepts ${what}s`);
      continue;
    }
    const res = await drain(ctx, request(ctx, target.id, [...say("Describe this."), block]));
    const err = res.events.find((e) => e.event.case === "error")?.event.value as
      | { category: number }
      | undefined;
    const ok = err?.category === ModelErrorCategory.INVALID_REQUEST || res.status?.code === 3;
    ctx.record(
      id,
      ok ? "pass" : "fail",
      ok
        ? `${target.id} rejects ${what}s with invalid_request`
        : `${target.id} declares no ${what} support but did not reject one with invalid_request`,
    );
  }
}

/** Cancelling mid-stream ends the call with CANCELLED, no error event, and no crash. */
export async function checkCancellation(ctx: CheckContext, model: ModelSpec): Promise<void> {
  const controller = new AbortController();
  const crashes = ctx.host.crashCount;
  const res = await drain(
    ctx,
    request(ctx, model.id, say("Count slowly from one to two hundred, one number per line.")),
    controller.signal,
    () => controller.abort(),
  );
  const errorEvent = res.events.some((e) => e.event.case === "error");
  const cancelled = controller.signal.aborted;
  // The plugin must still answer afterwards.
  let alive = true;
  try {
    await ctx.host.client(ModelService).getCapabilities({});
  } catch {
    alive = false;
  }
  const crashed = ctx.host.crashCount > crashes;
  const status = res.status && res.status.code !== GRPC_CANCELLED ? res.status.status : undefined;
  const problems = [
    ...(errorEvent ? ["an error event was sent for a cancelled call"] : []),
    ...(status ? [`the call ended with ${status} instead of CANCELLED`] : []),
    ...(crashed || !alive ? ["the plugin did not survive the cancellation"] : []),
  ];
  ctx.record(
    "model.stream.cancel",
    problems.length ? "fail" : cancelled ? "pass" : "warn",
    problems.length
      ? problems.join("; ")
      : cancelled
        ? "cancelled after the first event; the plugin kept serving"
        : "the stream produced no event to cancel after",
  );
}

export async function checkCountTokens(ctx: CheckContext, model: ModelSpec): Promise<void> {
  try {
    const res = await ctx.host
      .client(ModelService)
      .countTokens({ text: "hello conformance", modelId: model.id });
    ctx.record(
      "model.count_tokens",
      res.count > 0n ? "pass" : "fail",
      res.count > 0n ? `${res.count} tokens` : "a non-empty text counted as zero tokens",
    );
  } catch (err) {
    if (err instanceof RpcError && err.code === GRPC_UNIMPLEMENTED)
      ctx.record("model.count_tokens", "warn", "not implemented; the kernel falls back to its heuristic");
    else ctx.record("model.count_tokens", "fail", `CountTokens failed: ${(err as Error).message}`);
  }
}

/**
 * With the canary as every secret, a completion fails (the vendor refuses the key); the
 * error and every log line must not contain it. The real configuration is restored.
 */
export async function checkSecrets(
  ctx: CheckContext,
  caps: Capabilities | undefined,
  model: ModelSpec,
): Promise<void> {
  const sensitive = (caps?.configSchema?.attributes ?? []).filter((a) => a.sensitive);
  if (sensitive.length === 0) {
    ctx.record("model.secrets", "skip", "no sensitive attribute");
    return;
  }
  const client = ctx.host.client(ModelService);
  const config = { ...ctx.config };
  for (const a of sensitive) config[a.name] = SECRET_CANARY;
  await client.configure({ config });
  const res = await drain(ctx, request(ctx, model.id, say("hi")));
  await client.configure({ config: ctx.config });
  const inEvents = JSON.stringify(
    res.events.map((e) => e.event),
    (_k, v) => (typeof v === "bigint" ? String(v) : v),
  ).includes(SECRET_CANARY);
  const inStatus = res.status?.message.includes(SECRET_CANARY) ?? false;
  const inLogs = ctx.logs.some((l) => JSON.stringify(l).includes(SECRET_CANARY));
  const err = res.events.find((e) => e.event.case === "error")?.event.value as
    | { category: number }
    | undefined;
  const problems = [
    ...(inEvents ? ["the secret appears in the stream"] : []),
    ...(inStatus ? ["the secret appears in a gRPC status"] : []),
    ...(inLogs ? ["the secret appears in the plugin's log"] : []),
  ];
  ctx.record(
    "model.secrets",
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : err
        ? `a refused key came back as ${ModelErrorCategory[err.category]}, without the secret anywhere`
        : "the secret never appeared in events or logs",
  );
  if (err && err.category !== ModelErrorCategory.AUTH_ERROR)
    ctx.record(
      "model.errors.auth",
      "warn",
      `a refused key was classified as ${ModelErrorCategory[err.category]}, not AUTH_ERROR`,
    );
  else if (err) ctx.record("model.errors.auth", "pass", "a refused key is an auth_error");
}

/** A 1x1 transparent PNG. */
const PNG_1PX = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
    "base64",
  ),
);
