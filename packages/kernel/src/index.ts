// Entry point of the kernel package: createKernel and the types its callers use. The
// domain core is also reachable on its own as "@pluggableharness/kernel/domain".

export { InvocationTracker } from "./callbacks/invocations.ts";
export { type KernelClock, systemClock } from "./clock.ts";
export * as domain from "./domain/index.ts";
export { attachHandler } from "./frontends/attach.ts";
export type { AttachPlan, BackfillSource, ServerEventInit, Subscriber } from "./frontends/channel.ts";
export { expandTemplate, FrontendRequestError } from "./frontends/hub.ts";
export { EventRenderer, genericRenderTree, hasContent, type RenderableEvent } from "./frontends/renderer.ts";
export { type HookContext, HookDispatcher, type HookOutcome } from "./hooks/dispatcher.ts";
export {
  createKernel,
  type Kernel,
  type KernelOptions,
  type SessionHandle,
  type SessionToolDefinition,
  type StartSessionOptions,
} from "./kernel.ts";
export {
  discardLog,
  KernelLogger,
  type KernelLogLevel,
  type KernelLogRecord,
  type KernelLogSink,
  LOG_LEVEL_ORDER,
} from "./log.ts";
export { DEFAULT_LIMITS, type LoopLimits } from "./loop/deps.ts";
export type {
  ClientEventInit,
  ConnectOptions,
  FrontendConnection,
  FrontendPort,
} from "./loop/frontend-port.ts";
export { imageBlock } from "./loop/gate/call.ts";
export {
  commandArguments,
  DIRECT_INVOKE_REASON,
  type DirectInvokeOutcome,
  type InvocationOrigin,
} from "./loop/session/direct-invoke.ts";
export { finalAnswerInstruction } from "./loop/session/driver.ts";
export {
  declaredToolName,
  type SessionToolInfo,
  TOOL_NAME_SEPARATOR,
  type ToolKindName,
  ToolNameCollisionError,
} from "./loop/tool-registry.ts";
export { CircuitBreaker, CostNode, callHash, DoomLoopDetector, type StopReason } from "./loop/turn/bounds.ts";
export { type RetryWait, retryDelayMs, retryWait } from "./loop/turn/model-call.ts";
export type { VendorThrottle } from "./loop/vendor-throttle.ts";
export {
  entryLine,
  MemoryAudit,
  MemoryAuditError,
  type MemoryCall,
  type MemoryEntry,
  recordText,
} from "./memory/audit.ts";
export { memoryContentNode, memoryLinkUrl, memorySlug, parseMemoryLinks } from "./memory/links.ts";
export {
  DescribeCache,
  defaultDescribeCacheDir,
  keptAnswerDigest,
  keptModelsAllowed,
  type ProviderDescription,
  sourcesFingerprint,
} from "./plugins/describe-cache.ts";
export { noteLaunch } from "./plugins/launch-log.ts";
export { PluginPool, type PluginPoolOptions } from "./plugins/pool.ts";
export {
  acceptedDigest,
  describeCacheKey,
  ProviderConfigureError,
  ProviderLoadError,
  type ProviderStatus,
  providerTransport,
} from "./plugins/providers.ts";
export { outsidePluginSandbox } from "./plugins/sandbox.ts";
export type { InProcessPlugin, InProcessPluginFactory } from "./providers/in-process.ts";
export {
  type ContextProvider,
  type FrontendProvider,
  type HookProvider,
  type MemoryProvider,
  type ModelProvider,
  ProviderCallError,
  type ProviderCallOptions,
  type ProviderPorts,
  ProviderUnavailableError,
  type SlashCommandProvider,
  type ToolProvider,
  type WidgetProvider,
} from "./providers/ports.ts";
export { noTrace, type TraceEvent, type Tracer } from "./trace.ts";
export { KERNEL_VERSION } from "./version.ts";
