// The ModelService scaffold in-process: configuration, request checks, error events,
// redaction and cancellation, with a stub adapter.
import { create } from "@bufbuild/protobuf";
import type { PluginContext } from "@pluggableharness/plugin-sdk";
import { Role } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  type StreamCompletionRequest,
  StreamCompletionRequestSchema,
} from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { type CatalogModel, createModelService, ev, type ModelAdapter, ModelFailure } from "../src/index.ts";

const SECRET = "sk-stub-secret-0042";
const lines: string[] = [];
const log = {
  name: "stub",
  trace: () => {},
  debug: (m: string, f?: object) => lines.push(`${m} ${JSON.stringify(f)}`),
  info: (m: string, f?: object) => lines.push(`${m} ${JSON.stringify(f)}`),
  warn: (m: string, f?: object) => lines.push(`${m} ${JSON.stringify(f)}`),
  error: (m: string, f?: object) => lines.push(`${m} ${JSON.stringify(f)}`),
  fatal: () => {},
  named: () => log,
} as unknown as PluginContext["log"];
const ctx = (signal = new AbortController().signal) => ({ signal, log }) as unknown as PluginContext;

const model: CatalogModel = {
  id: "stub-1",
  contextWindow: 1000,
  maxOutputTokens: 100,
  toolUse: true,
  vision: false,
  documents: false,
  streaming: true,
  parallelToolCalls: false,
  caching: { explicitMarkers: false, implicitAutomatic: false },
  toolChoiceModes: ["auto"],
  pricing: { tiers: [{ input: 1, output: 2 }] },
  sources: { all: "test" },
};

type Behaviour = "text" | "failure" | "crash" | "hang";
let behaviour: Behaviour = "text";
let hanging: () => void = () => {};
let disposed = 0;

const adapter: ModelAdapter<{ key: string }> = {
  packageJson: { name: "@x/stub", version: "1.0.0" } as never,
  name: "stub",
  attributes: [{ name: "api_key", kind: "string", required: true, sensitive: true, description: "key" }],
  builtins: [model],
  ownsModel: (id) => id.startsWith("stub-"),
  configure: (values) => ({ key: String(values["api_key"]) }),
  async *stream(_req, call) {
    yield ev.start("req-1");
    if (behaviour === "failure")
      throw new ModelFailure("rate_limited", `quota for ${call.state.key} exceeded`, {
        retryAfterSeconds: 2,
      });
    if (behaviour === "crash") throw new TypeError(`cannot read ${call.state.key}`);
    if (behaviour === "hang") {
      hanging();
      await new Promise<void>((resolve) => call.signal.addEventListener("abort", () => resolve()));
      throw new DOMException("aborted", "AbortError");
    }
    yield ev.text("hi");
    yield ev.stop(1);
  },
  dispose: () => {
    disposed++;
  },
};

const request = (init: object = {}): StreamCompletionRequest =>
  create(StreamCompletionRequestSchema, {
    modelId: "stub-1",
    messages: [{ role: Role.USER, content: [{ block: { case: "text", value: { text: "hi" } } }] }],
    ...init,
  });

async function run(service: ReturnType<typeof createModelService>, req = request(), signal?: AbortSignal) {
  const out: Array<{ event: { case: string | undefined; value?: unknown } }> = [];
  for await (const e of service.streamCompletion(req, ctx(signal))) out.push(e as (typeof out)[number]);
  return out;
}

describe("createModelService", () => {
  it("refuses to stream before Configure and after a rejected one", async () => {
    const service = createModelService(adapter);
    const [e] = await run(service);
    expect(e?.event).toMatchObject({
      case: "error",
      value: { category: ModelErrorCategory.INVALID_REQUEST },
    });
    const rejected = await service.configure({ config: {} }, ctx());
    expect(rejected.result.diagnostics.map((d) => d.summary)).toContain(
      'Missing required attribute "api_key"',
    );
    expect((await run(service))[0]?.event.case).toBe("error");
  });

  it("serves built-in and declared models, and disposes replaced state", async () => {
    const service = createModelService(adapter);
    const caps0 = service.getCapabilities().capabilities;
    expect(caps0.models.map((m) => m.id)).toEqual(["stub-1"]);
    expect(caps0.configSchema!.attributes.map((a) => a.name)).toEqual(["api_key", "models_json"]);
    await service.configure(
      { config: { api_key: SECRET, models_json: '{"stub-2": {"like": "stub-1"}}' } },
      ctx(),
    );
    expect(service.getCapabilities().capabilities.models.map((m) => m.id)).toEqual(["stub-1", "stub-2"]);
    const before = disposed;
    await service.configure({ config: { api_key: SECRET } }, ctx());
    expect(disposed).toBe(before + 1);
  });

  it("turns failures into classified, redacted error events", async () => {
    const service = createModelService(adapter);
    await service.configure({ config: { api_key: SECRET } }, ctx());
    behaviour = "text";
    expect((await run(service)).map((e) => e.event.case)).toEqual(["streamStart", "textDelta", "stop"]);
    behaviour = "failure";
    const failed = await run(service);
    const err = failed.at(-1)!.event;
    expect(err).toMatchObject({
      case: "error",
      value: { category: ModelErrorCategory.RATE_LIMITED, retryable: true, retryAfterSeconds: 2 },
    });
    expect(JSON.stringify(err.value)).not.toContain(SECRET);
    behaviour = "crash";
    const crashed = (await run(service)).at(-1)!.event;
    expect(crashed).toMatchObject({
      case: "error",
      value: { category: ModelErrorCategory.UNKNOWN, retryable: false },
    });
    expect(JSON.stringify(crashed.value)).not.toContain(SECRET);
    expect(lines.some((l) => l.includes(SECRET))).toBe(false);
  });

  it("rejects unknown models and unsupported content before calling the adapter", async () => {
    const service = createModelService(adapter);
    await service.configure({ config: { api_key: SECRET } }, ctx());
    const unknown = await run(service, request({ modelId: "nope" }));
    expect(unknown.map((e) => e.event.case)).toEqual(["error"]);
    const image = await run(
      service,
      request({
        messages: [
          {
            role: Role.USER,
            content: [
              {
                block: {
                  case: "image",
                  value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1]) } },
                },
              },
            ],
          },
        ],
      }),
    );
    expect(image.map((e) => e.event.case)).toEqual(["error"]);
    expect(image[0]!.event.value).toMatchObject({ category: ModelErrorCategory.INVALID_REQUEST });
  });

  it("ends a cancelled stream without an error event", async () => {
    const service = createModelService(adapter);
    await service.configure({ config: { api_key: SECRET } }, ctx());
    behaviour = "hang";
    const controller = new AbortController();
    const started = new Promise<void>((resolve) => {
      hanging = resolve;
    });
    const pending = run(service, request(), controller.signal);
    await started;
    controller.abort();
    const events = await pending;
    expect(events.map((e) => e.event.case)).toEqual(["streamStart"]);
  });
});
