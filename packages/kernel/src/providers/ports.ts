// The kernel's side of the provider seam: one interface per plugin category, speaking the
// contract's messages (proto/, as the generated protobuf-es types) and nothing of how a
// plugin is reached. The loop, the gate, sessions, hooks, callbacks and rendering call
// these only; a transport implements them: grpc.ts over go-plugin (a subprocess, or a
// worker thread speaking the same clients), in-process.ts by calling a plugin's service
// implementations directly. See docs/decisions/turn-loop.md, "The provider seam".
//
// Requests are the messages' init shapes (what `create(Schema, init)` takes), answers the
// messages. Failures are transport-neutral: ProviderCallError carries the contract's
// status code (the gRPC numbering the spec uses), ProviderUnavailableError says the
// plugin's process or thread died or never came up (the transport relaunches it on the
// next call). An aborted signal or an expired timeoutMs rejects the call.
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type {
  ConfigureRequestSchema as ContextConfigureRequestSchema,
  ConfigureResponse as ContextConfigureResponse,
  ContextContribution,
  GetCapabilitiesRequestSchema as ContextGetCapabilitiesRequestSchema,
  GetCapabilitiesResponse as ContextGetCapabilitiesResponse,
  RenderRequestSchema as ContextRenderRequestSchema,
  RenderResponse as ContextRenderResponse,
  ContextRequestSchema,
} from "@pluggableharness/protocol/context";
import type {
  ConfigureRequestSchema as FrontendConfigureRequestSchema,
  ConfigureResponse as FrontendConfigureResponse,
  GetCapabilitiesRequestSchema as FrontendGetCapabilitiesRequestSchema,
  GetCapabilitiesResponse as FrontendGetCapabilitiesResponse,
} from "@pluggableharness/protocol/frontend";
import type { DispatchHookRequestSchema, DispatchHookResponse } from "@pluggableharness/protocol/hook";
import type {
  ApproveRecordRequestSchema,
  ApproveRecordResponse,
  DeleteRecordRequestSchema,
  DeleteRecordResponse,
  GetRecordRequestSchema,
  GetRecordResponse,
  ListRecordsRequestSchema,
  ListRecordsResponse,
  ConfigureRequestSchema as MemoryConfigureRequestSchema,
  ConfigureResponse as MemoryConfigureResponse,
  GetCapabilitiesRequestSchema as MemoryGetCapabilitiesRequestSchema,
  GetCapabilitiesResponse as MemoryGetCapabilitiesResponse,
  RenderRequestSchema as MemoryRenderRequestSchema,
  RenderResponse as MemoryRenderResponse,
  RecallRequestSchema,
  RecallResponse,
  RecordRequestSchema,
  RecordResponse,
  RejectRecordRequestSchema,
  RejectRecordResponse,
  UpdateRecordRequestSchema,
  UpdateRecordResponse,
} from "@pluggableharness/protocol/memory";
import type {
  CountTokensRequestSchema,
  CountTokensResponse,
  ConfigureRequestSchema as ModelConfigureRequestSchema,
  ConfigureResponse as ModelConfigureResponse,
  GetCapabilitiesRequestSchema as ModelGetCapabilitiesRequestSchema,
  GetCapabilitiesResponse as ModelGetCapabilitiesResponse,
  RenderRequestSchema as ModelRenderRequestSchema,
  RenderResponse as ModelRenderResponse,
  StreamCompletionRequestSchema,
  StreamEvent,
} from "@pluggableharness/protocol/model";
import type { SlashCommandSpec } from "@pluggableharness/protocol/slashcommand";
import { StatusCode } from "@pluggableharness/protocol/status-codes";
import type {
  GetSchemaRequestSchema,
  GetSchemaResponse,
  InvokeRequestSchema,
  InvokeResponse,
  PreviewRequestSchema,
  PreviewResponse,
  ConfigureRequestSchema as ToolConfigureRequestSchema,
  ConfigureResponse as ToolConfigureResponse,
  RenderRequestSchema as ToolRenderRequestSchema,
  RenderResponse as ToolRenderResponse,
} from "@pluggableharness/protocol/tool";
import type {
  AttachRequestSchema,
  ConfigureRequestSchema as WidgetConfigureRequestSchema,
  ConfigureResponse as WidgetConfigureResponse,
  GetCapabilitiesRequestSchema as WidgetGetCapabilitiesRequestSchema,
  GetCapabilitiesResponse as WidgetGetCapabilitiesResponse,
  WidgetUpdate,
} from "@pluggableharness/protocol/widget";

export interface ProviderCallOptions {
  /** Aborting cancels the call, which then rejects. */
  readonly signal?: AbortSignal;
  /** Milliseconds until the call fails with DEADLINE_EXCEEDED (a ProviderCallError). */
  readonly timeoutMs?: number;
}

type In<S extends DescMessage> = MessageInitShape<S>;
type Unary<Req, Res> = (request: Req, options?: ProviderCallOptions) => Promise<Res>;
type Stream<Req, Res> = (request: Req, options?: ProviderCallOptions) => AsyncIterable<Res>;

/** ModelService: capabilities, configuration, completions, token counts, rendering. */
export interface ModelProvider {
  getCapabilities: Unary<In<typeof ModelGetCapabilitiesRequestSchema>, ModelGetCapabilitiesResponse>;
  configure: Unary<In<typeof ModelConfigureRequestSchema>, ModelConfigureResponse>;
  streamCompletion: Stream<In<typeof StreamCompletionRequestSchema>, StreamEvent>;
  countTokens: Unary<In<typeof CountTokensRequestSchema>, CountTokensResponse>;
  render: Unary<In<typeof ModelRenderRequestSchema>, ModelRenderResponse>;
}

/** ToolService: the schema, configuration, Preview, Invoke and rendering. */
export interface ToolProvider {
  getSchema: Unary<In<typeof GetSchemaRequestSchema>, GetSchemaResponse>;
  configure: Unary<In<typeof ToolConfigureRequestSchema>, ToolConfigureResponse>;
  preview: Unary<In<typeof PreviewRequestSchema>, PreviewResponse>;
  invoke: Stream<In<typeof InvokeRequestSchema>, InvokeResponse>;
  render: Unary<In<typeof ToolRenderRequestSchema>, ToolRenderResponse>;
}

/** ContextService: capabilities, configuration, Contribute and rendering. */
export interface ContextProvider {
  getCapabilities: Unary<In<typeof ContextGetCapabilitiesRequestSchema>, ContextGetCapabilitiesResponse>;
  configure: Unary<In<typeof ContextConfigureRequestSchema>, ContextConfigureResponse>;
  contribute: Unary<In<typeof ContextRequestSchema>, ContextContribution>;
  render: Unary<In<typeof ContextRenderRequestSchema>, ContextRenderResponse>;
}

/** MemoryService: capabilities, configuration, the record operations and rendering. */
export interface MemoryProvider {
  getCapabilities: Unary<In<typeof MemoryGetCapabilitiesRequestSchema>, MemoryGetCapabilitiesResponse>;
  configure: Unary<In<typeof MemoryConfigureRequestSchema>, MemoryConfigureResponse>;
  recall: Unary<In<typeof RecallRequestSchema>, RecallResponse>;
  record: Unary<In<typeof RecordRequestSchema>, RecordResponse>;
  updateRecord: Unary<In<typeof UpdateRecordRequestSchema>, UpdateRecordResponse>;
  deleteRecord: Unary<In<typeof DeleteRecordRequestSchema>, DeleteRecordResponse>;
  listRecords: Unary<In<typeof ListRecordsRequestSchema>, ListRecordsResponse>;
  getRecord: Unary<In<typeof GetRecordRequestSchema>, GetRecordResponse>;
  approveRecord: Unary<In<typeof ApproveRecordRequestSchema>, ApproveRecordResponse>;
  rejectRecord: Unary<In<typeof RejectRecordRequestSchema>, RejectRecordResponse>;
  render: Unary<In<typeof MemoryRenderRequestSchema>, MemoryRenderResponse>;
}

/** HookSubscriberService: one dispatch per subscribed point. */
export interface HookProvider {
  dispatchHook: Unary<In<typeof DispatchHookRequestSchema>, DispatchHookResponse>;
}

/**
 * FrontendService as the kernel calls it (capabilities, configuration). A frontend's
 * session traffic goes the other way: it dials the kernel's Attach (frontends/attach.ts).
 */
export interface FrontendProvider {
  getCapabilities: Unary<In<typeof FrontendGetCapabilitiesRequestSchema>, FrontendGetCapabilitiesResponse>;
  configure: Unary<In<typeof FrontendConfigureRequestSchema>, FrontendConfigureResponse>;
}

/** WidgetService: capabilities, configuration and the stream of widget updates. */
export interface WidgetProvider {
  getCapabilities: Unary<In<typeof WidgetGetCapabilitiesRequestSchema>, WidgetGetCapabilitiesResponse>;
  configure: Unary<In<typeof WidgetConfigureRequestSchema>, WidgetConfigureResponse>;
  attach: Stream<In<typeof AttachRequestSchema>, WidgetUpdate>;
}

/**
 * Slash commands have no service of their own: a provider of any category declares them
 * in its description (GetSchema / GetCapabilities). This is what the kernel reads.
 */
export interface SlashCommandProvider {
  readonly slashCommands: readonly SlashCommandSpec[];
}

/** Every category one plugin may serve, as the kernel reaches it. */
export interface ProviderPorts {
  readonly model: ModelProvider;
  readonly tool: ToolProvider;
  readonly context: ContextProvider;
  readonly memory: MemoryProvider;
  readonly hook: HookProvider;
  readonly frontend: FrontendProvider;
  readonly widget: WidgetProvider;
}

/** Status codes of the contract (gRPC's numbering) the kernel reacts to. */
export const ProviderStatus = StatusCode;

/** A provider answered a call with a non-OK status. */
export class ProviderCallError extends Error {
  /** The contract's status code (ProviderStatus). */
  readonly code: number;
  /** The provider's own message. */
  readonly details: string;
  /** "<Service>/<Method>". */
  readonly method: string;
  constructor(code: number, details: string, method: string, message?: string) {
    super(message ?? `${method} failed with status ${code}: ${details}`);
    this.name = "ProviderCallError";
    this.code = code;
    this.details = details;
    this.method = method;
  }
}

/**
 * The provider's process or thread died during the call ("crashed"), or could not be
 * started for it ("launch_failed"). The kernel reports process_crashed per the
 * taxonomy; the transport relaunches on the next call.
 */
export class ProviderUnavailableError extends Error {
  readonly provider: string;
  readonly reason: "crashed" | "launch_failed";
  constructor(provider: string, reason: "crashed" | "launch_failed", message: string, cause?: unknown) {
    super(message, { cause });
    this.name = "ProviderUnavailableError";
    this.provider = provider;
    this.reason = reason;
  }
}
