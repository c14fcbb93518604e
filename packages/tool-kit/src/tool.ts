// The ToolService adapter every first-party tool provider uses: operations are declared
// once (schema, classification, behaviour) and this module answers GetSchema, checks
// arguments, runs Invoke with exactly one terminal event, classifies failures, answers
// Preview and Render, and reports what a cancelled call had done.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  type KernelClient,
  type Logger,
  type PackageMetadata,
  type PluginContext,
  type ServedPlugin,
  StatusError,
  serve,
  service,
} from "@pluggableharness/plugin-sdk";
import type { CallContext } from "@pluggableharness/protocol/common";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";
import { RiskClass, ToolKind, ToolService } from "@pluggableharness/protocol/tool";
import { type ConfigField, configSchema, type Diagnostic, readConfig } from "./config.ts";
import { errorEvent, partialResult, resultEvent, type ToolEventInit, ToolFailure } from "./events.ts";
import type { RenderNodeInit } from "./render.ts";
import { checkValue, type Infer, type ObjectSchema, toWireSchema } from "./schema.ts";

export type KindName = "resource" | "data_source" | "interactive";
export type RiskName = "read_only" | "low" | "moderate" | "high" | "critical";

const KINDS: Record<KindName, ToolKind> = {
  resource: ToolKind.RESOURCE,
  data_source: ToolKind.DATA_SOURCE,
  interactive: ToolKind.INTERACTIVE,
};
const RISKS: Record<RiskName, RiskClass> = {
  read_only: RiskClass.READ_ONLY,
  low: RiskClass.LOW,
  moderate: RiskClass.MODERATE,
  high: RiskClass.HIGH,
  critical: RiskClass.CRITICAL,
};

/** gRPC status codes used by Preview and Render failures. */
const CODE = {
  invalidArgument: 3,
  deadlineExceeded: 4,
  notFound: 5,
  permissionDenied: 7,
  failedPrecondition: 9,
  unimplemented: 12,
  internal: 13,
} as const;

export interface ToolContext {
  readonly callId: string;
  readonly toolName: string;
  readonly callContext: CallContext | undefined;
  /** call_context.working_directory, or undefined when empty. */
  readonly workingDirectory: string | undefined;
  /** call_context.session_id, or undefined when empty. */
  readonly sessionId: string | undefined;
  /** Aborted when the kernel cancels the call: stop work, release resources. */
  readonly signal: AbortSignal;
  readonly kernel: KernelClient;
  readonly log: Logger;
  /**
   * The kernel's trace context for this call (`traceparent`, `tracestate`; empty when the
   * kernel exports no telemetry): the parent to give your own OpenTelemetry spans.
   */
  readonly traceContext: Readonly<Record<string, string>>;
  /**
   * Records what the call has done so far (merged into earlier reports). If the call is
   * cancelled, the latest report is what the plugin tells the kernel had happened.
   */
  report(state: JsonObject): void;
}

export type PreviewContext = Omit<ToolContext, "report">;

/** What Render gets: a decoded tool_call or tool_result event of this operation. */
export type RenderInput =
  | { kind: "tool_call"; arguments: JsonObject }
  | {
      kind: "tool_result";
      /** The result payload; absent when the call failed. */
      payload?: JsonObject;
      error?: { category: number; message: string };
      /** Output chunks the kernel kept, concatenated per stream in arrival order. */
      output: string;
      exitStatus?: { exitCode: number; signal?: string };
      denied: boolean;
    };

export type InvokeOutput = AsyncGenerator<ToolEventInit, JsonObject, void> | Promise<JsonObject>;

export interface ToolDefinition<A = JsonObject> {
  name: string;
  kind: KindName;
  risk: RiskName;
  description: string;
  input: ObjectSchema;
  output: ObjectSchema;
  /** True when Invoke may emit output_chunk/progress/partial_result before its terminal event. */
  streaming: boolean;
  /** Required except for interactive operations, which must not declare one. */
  concurrency?: { safe: boolean; keyFields?: readonly string[] };
  defaultTimeoutMs?: number;
  idempotent: boolean;
  terminatesTurn?: boolean;
  /** Reached by the operator only (slash commands, actions); never declared to a model. */
  operatorOnly?: boolean;
  /**
   * Invoke runs a child session through the kernel's RunSession, for the agent profile
   * named by this string input field (ToolSchema.spawns).
   */
  spawns?: { profileField: string };
  /**
   * How a result reads to the model (ToolSchema.model_text_field): `field`, a top-level
   * string of `output`, is read verbatim after the other properties as compact JSON;
   * `omit` names properties that only restate it (kept in the payload for frontends).
   */
  modelText?: { field: string; omit?: readonly string[] };
  /**
   * ToolSchema.model_image_field: a top-level array of `{media_type, data}` (base64) in
   * `output` that the kernel shows a vision model as images, and any other as a note.
   */
  modelImages?: string;
  /**
   * ToolSchema.written_path_fields: a resource that changes only the files named by these
   * top-level string (or string array) inputs, so the kernel's checkpoints stat just those.
   */
  writtenPathFields?: readonly string[];
  /** Return the result payload; yield intermediate events; throw ToolFailure to fail. */
  invoke(args: A, ctx: ToolContext): InvokeOutput;
  /** Side-effect-free description of what invoke would do. */
  preview?(args: A, ctx: PreviewContext): Promise<RenderNodeInit | undefined> | RenderNodeInit | undefined;
  render?(input: RenderInput): RenderNodeInit | undefined;
}

/**
 * A tool whose handler arguments are typed from its declared input schema (`Infer`), so the
 * schema the model sees and the type the code reads cannot drift apart; the service checks
 * every call against the same schema (checkValue) before invoke runs.
 */
export function defineTool<const I extends ObjectSchema>(
  tool: ToolDefinition<Infer<I>> & { input: I },
): ToolDefinition<Infer<I>> {
  return tool;
}

/** What Configure gives a provider besides its values: the kernel's callbacks (its owned paths, say). */
export interface ConfigureContext {
  readonly kernel: KernelClient;
  readonly log: Logger;
}

export interface ToolProviderOptions {
  // biome-ignore lint/suspicious/noExplicitAny: operations declare their own argument types
  tools: readonly ToolDefinition<any>[];
  config?: readonly ConfigField[];
  /**
   * Provider checks on configuration that passed the generic ones; apply it when no
   * ERROR diagnostic is returned.
   */
  configure?(values: JsonObject, ctx: ConfigureContext): Diagnostic[] | Promise<Diagnostic[]>;
  onShutdown?(): void | Promise<void>;
  /** Slash commands this provider declares (read at every GetSchema). */
  slashCommands?(): SlashCommandSpecInit[];
  /** The operations (and slash commands) depend on the configuration: the kernel asks again after Configure. */
  operationsFromConfig?: boolean;
  /**
   * With operationsFromConfig: the operations depend on the configuration and on the
   * paths operationSources names only, so the kernel may keep them and start the provider
   * at its first use (never set for operations that change on their own).
   */
  operationsCacheable?: boolean;
  /** The files and directories the configured operations were read from. */
  operationSources?(): string[];
}

export interface SlashCommandSpecInit {
  name: string;
  description: string;
  /** Direct invoke of one of this provider's tools, or a template expanded into a user message. */
  toolName?: string;
  template?: string;
}

/** How long a cancellation report may take to reach the kernel before it is dropped. */
const REPORT_TIMEOUT_MS = 1_500;

function durationOf(ms: number): { seconds: bigint; nanos: number } {
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

function previewCode(failure: ToolFailure): number {
  switch (failure.category) {
    case "invalid_arguments":
      return CODE.invalidArgument;
    case "not_found":
      return CODE.notFound;
    case "permission_denied":
      return CODE.permissionDenied;
    case "timeout":
      return CODE.deadlineExceeded;
    default:
      return CODE.failedPrecondition;
  }
}

function describeError(err: unknown): JsonObject {
  if (err instanceof Error) {
    return { error: err.message, name: err.name, ...(err.stack ? { stack: err.stack.slice(0, 2000) } : {}) };
  }
  return { error: String(err) };
}

function isAsyncGenerator(x: InvokeOutput): x is AsyncGenerator<ToolEventInit, JsonObject, void> {
  return typeof (x as { next?: unknown }).next === "function";
}

const wrap = (event: ToolEventInit) => ({ event });

function decodeChunks(chunks: readonly { data: Uint8Array }[]): string {
  const decoder = new TextDecoder();
  return chunks.map((c) => decoder.decode(c.data, { stream: true })).join("") + decoder.decode();
}

export function toolService(options: ToolProviderOptions) {
  const byName = new Map(options.tools.map((t) => [t.name, t]));
  const fields = options.config ?? [];

  const contextFor = (
    call: { id: string; toolName: string; callContext?: CallContext },
    ctx: PluginContext,
  ) => {
    let state: JsonObject = {};
    const tc: ToolContext = {
      callId: call.id,
      toolName: call.toolName,
      callContext: call.callContext,
      workingDirectory: call.callContext?.workingDirectory || undefined,
      sessionId: call.callContext?.sessionId || undefined,
      signal: ctx.signal,
      kernel: ctx.kernel,
      log: ctx.log,
      get traceContext() {
        return ctx.traceContext;
      },
      report: (s) => {
        state = { ...state, ...s };
      },
    };
    return { tc, state: () => state };
  };

  const argumentsOf = (tool: ToolDefinition, args: JsonObject | undefined): JsonObject => {
    const value: JsonObject = args ?? {};
    const problems = checkValue(tool.input, value as JsonValue);
    if (problems.length > 0) {
      throw new ToolFailure("invalid_arguments", `${tool.name}: ${problems.join("; ")}`, {
        details: { problems },
      });
    }
    return value;
  };

  async function reportCancellation(ctx: PluginContext, tc: ToolContext, state: JsonObject): Promise<void> {
    const fields: JsonObject = {
      call_id: tc.callId,
      tool_name: tc.toolName,
      ...(Object.keys(state).length > 0
        ? { report: state }
        : { report: { note: "cancelled before completion" } }),
    };
    ctx.log.warn("tool call cancelled", fields);
    const sent = ctx.kernel
      .log("warn", "tool call cancelled", fields, { logger: tc.toolName })
      .catch(() => {});
    await Promise.race([sent, new Promise((r) => setTimeout(r, REPORT_TIMEOUT_MS).unref())]);
  }

  return service(ToolService, {
    getSchema() {
      return {
        tools: options.tools.map((t) => ({
          name: t.name,
          kind: KINDS[t.kind],
          risk: RISKS[t.risk],
          description: t.description,
          inputSchema: toWireSchema(t.input),
          outputSchema: toWireSchema(t.output),
          streaming: t.streaming,
          ...(t.kind !== "interactive" && t.concurrency
            ? { concurrency: { safe: t.concurrency.safe, keyFields: [...(t.concurrency.keyFields ?? [])] } }
            : {}),
          ...(t.defaultTimeoutMs ? { defaultTimeout: durationOf(t.defaultTimeoutMs) } : {}),
          idempotent: t.idempotent,
          terminatesTurn: t.terminatesTurn === true,
          operatorOnly: t.operatorOnly === true,
          ...(t.spawns ? { spawns: { profileField: t.spawns.profileField } } : {}),
          ...(t.modelText
            ? { modelTextField: t.modelText.field, modelOmittedFields: [...(t.modelText.omit ?? [])] }
            : {}),
          ...(t.modelImages ? { modelImageField: t.modelImages } : {}),
          ...(t.writtenPathFields ? { writtenPathFields: [...t.writtenPathFields] } : {}),
        })),
        configSchema: configSchema(fields),
        previewSupported: options.tools.filter((t) => t.preview).map((t) => t.name),
        slashCommands: (options.slashCommands?.() ?? []).map((c) =>
          c.toolName !== undefined
            ? {
                name: c.name,
                description: c.description,
                dispatch: Dispatch.DIRECT_INVOKE,
                toolName: c.toolName,
              }
            : {
                name: c.name,
                description: c.description,
                dispatch: Dispatch.PROMPT_EXPANSION,
                template: c.template ?? "",
              },
        ),
        ...(options.operationsFromConfig ? { operationsFromConfig: true } : {}),
        ...(options.operationsFromConfig && options.operationsCacheable
          ? { operationsCacheable: true, operationSources: options.operationSources?.() ?? [] }
          : {}),
      };
    },

    async configure(req, ctx) {
      const { values, diagnostics } = readConfig(fields, req.config);
      if (diagnostics.length === 0 && options.configure)
        diagnostics.push(...(await options.configure(values, { kernel: ctx.kernel, log: ctx.log })));
      return { result: { diagnostics } };
    },

    async *invoke(req, ctx) {
      const call = req.call;
      const tool = call ? byName.get(call.toolName) : undefined;
      if (!call || !tool) {
        const known = [...byName.keys()].join(", ");
        yield wrap(
          errorEvent(
            new ToolFailure(
              "invalid_arguments",
              call
                ? `unknown operation ${JSON.stringify(call.toolName)}; this provider serves ${known}`
                : "no call",
            ),
          ),
        );
        return;
      }
      const { tc, state } = contextFor(call, ctx);
      let running: AsyncGenerator<ToolEventInit, JsonObject, void> | undefined;
      let reported = false;
      const cancelled = async () => {
        reported = true;
        // Stop the operation if it is still suspended, so its cleanup runs first.
        await running?.return({}).catch(() => {});
        // The stream is gone: the report travels through the kernel's Log callback.
        await reportCancellation(ctx, tc, state());
      };
      try {
        const args = argumentsOf(tool, call.arguments);
        const out = tool.invoke(args, tc);
        let payload: JsonObject;
        if (isAsyncGenerator(out)) {
          running = out;
          for (;;) {
            const step = await out.next();
            if (step.done) {
              payload = step.value;
              break;
            }
            if (ctx.signal.aborted) throw ctx.signal.reason;
            yield wrap(step.value);
          }
          running = undefined;
        } else {
          payload = await out;
        }
        if (ctx.signal.aborted) throw ctx.signal.reason;
        yield wrap(resultEvent(payload));
      } catch (err) {
        if (ctx.signal.aborted) {
          await cancelled();
          yield wrap(partialResult({ cancelled: true, ...state() }));
          return;
        }
        if (err instanceof ToolFailure) {
          yield wrap(errorEvent(err));
          return;
        }
        ctx.log.error("operation failed unexpectedly", { tool: tool.name, ...describeError(err) });
        yield wrap(
          errorEvent(
            new ToolFailure(
              "unknown",
              `${tool.name} failed unexpectedly: ${(err as Error)?.message ?? String(err)}`,
              {
                details: describeError(err),
              },
            ),
          ),
        );
      } finally {
        // Reached without the catch when the SDK stops pulling at a yield.
        if (ctx.signal.aborted && !reported) await cancelled();
      }
    },

    async preview(req, ctx) {
      const call = req.call;
      const tool = call ? byName.get(call.toolName) : undefined;
      if (!call || !tool) {
        throw new StatusError(
          CODE.invalidArgument,
          `unknown operation ${JSON.stringify(call?.toolName ?? "")}`,
        );
      }
      if (!tool.preview) throw new StatusError(CODE.unimplemented, `${tool.name} has no preview`);
      const { tc } = contextFor(call, ctx);
      try {
        const node = await tool.preview(argumentsOf(tool, call.arguments), tc);
        return node ? { preview: { root: node } } : {};
      } catch (err) {
        if (err instanceof ToolFailure) throw new StatusError(previewCode(err), err.message);
        throw err;
      }
    },

    async render(req) {
      // Payloads are event.v1 messages; "1" is the only version emitted so far.
      if (req.schemaVersion !== "1") return {};
      const { fromBinary, events } = renderModules ?? (await loadRenderModules());
      let input: RenderInput;
      let tool: ToolDefinition | undefined;
      try {
        if (req.kind === "tool_result") {
          const ev = fromBinary(events.ToolResultEventSchema, req.payload);
          tool = byName.get(ev.toolName);
          input = {
            kind: "tool_result",
            ...(ev.outcome.case === "result" ? { payload: ev.outcome.value.payload ?? {} } : {}),
            ...(ev.outcome.case === "error"
              ? { error: { category: ev.outcome.value.category, message: ev.outcome.value.message } }
              : {}),
            output: decodeChunks(ev.output),
            ...(ev.exitStatus
              ? {
                  exitStatus: {
                    exitCode: ev.exitStatus.exitCode,
                    ...(ev.exitStatus.signal ? { signal: ev.exitStatus.signal } : {}),
                  },
                }
              : {}),
            denied: ev.denied,
          };
        } else if (req.kind === "tool_call") {
          const ev = fromBinary(events.ToolCallEventSchema, req.payload);
          tool = byName.get(ev.call?.toolName ?? "");
          input = { kind: "tool_call", arguments: ev.call?.arguments ?? {} };
        } else {
          return {};
        }
      } catch (err) {
        throw new StatusError(
          CODE.invalidArgument,
          `cannot decode the ${req.kind} payload: ${(err as Error).message}`,
        );
      }
      const node = tool?.render?.(input);
      return node ? { tree: { root: node } } : {};
    },
  });
}

/**
 * What Render decodes payloads with, imported on the first Render (start-up never needs
 * it) and kept: a dynamic import per call costs a module resolution each time.
 */
let renderModules:
  | {
      fromBinary: typeof import("@bufbuild/protobuf").fromBinary;
      events: typeof import("@pluggableharness/protocol/event");
    }
  | undefined;

async function loadRenderModules(): Promise<NonNullable<typeof renderModules>> {
  const [{ fromBinary }, events] = await Promise.all([
    import("@bufbuild/protobuf"),
    import("@pluggableharness/protocol/event"),
  ]);
  renderModules = { fromBinary, events };
  return renderModules;
}

/** Serves a tool provider from a plugin's main module. */
/** `packageJson`: its URL, or its parsed content (a bundled plugin imports it). */
export function serveTools(
  packageJson: URL | PackageMetadata,
  options: ToolProviderOptions,
): Promise<ServedPlugin> {
  return serve({
    packageJson,
    services: [toolService(options)],
    ...(options.onShutdown ? { onShutdown: options.onShutdown } : {}),
  });
}
