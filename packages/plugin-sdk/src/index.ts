// The plugin side of PluggableHarness: serve() and the helpers plugin authors use.
export { type CallOptions, StatusError } from "@pluggableharness/goplugin";
export { callContextPath, extractCallContext } from "./call-context.ts";
export {
  type EmitInput,
  type KernelClient,
  kernelForRequest,
  type LogOptions,
  logRequest,
  NoSessionError,
} from "./kernel.ts";
export { createLogger, type Logger, loggerOver } from "./logger.ts";
export { isMemorySlug, MEMORY_ID_MAX, memorySlug } from "./memory-ids.ts";
export {
  categoryFromName,
  categoryOfService,
  type PackageMetadata,
  type Producer,
  producerFor,
  readPackageMetadata,
} from "./metadata.ts";
export {
  type PluginContext,
  type ServedPlugin,
  type ServeOptions,
  type ServiceRegistration,
  serve,
  service,
} from "./serve.ts";
