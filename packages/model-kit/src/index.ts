// @pluggableharness/model-kit: vendor-neutral helpers for model-provider plugins.

export {
  type CatalogModel,
  type CustomModelDefaults,
  type CustomModelsResult,
  type DisableName,
  type ImageLimitsDef,
  type PricingTierDef,
  parseCustomModels,
  SAMPLING_NAMES,
  type SamplingDef,
  type SamplingName,
  type ThinkingDef,
  type ToolChoiceName,
  toModelSpec,
} from "./catalog.ts";
export {
  type AttributeDef,
  type AttributeKind,
  checkBaseUrl,
  configSchema,
  diagnostic,
  hasErrors,
  isLoopback,
  makeRedactor,
  type ParsedConfig,
  parseConfig,
  plainHttpRemote,
  plainHttpWarning,
} from "./config.ts";
export {
  argumentsJson,
  base64,
  checkContentSupport,
  EMPTY_TOOL_RESULT,
  type HistoryReport,
  hasVisibleText,
  type Origin,
  opaqueToString,
  originOf,
  type PreparedMessage,
  type ProviderIdentity,
  prepareHistory,
  systemTexts,
  textOf,
  toolResultText,
} from "./content.ts";
export { contextWindowStopFailure, isContextWindowStop } from "./context-stop.ts";
export {
  causeCode,
  classifyHttpFailure,
  DEFAULT_RETRYABLE,
  type ErrorCategory,
  exceedsRateLimit,
  type FailureInit,
  GRPC_CANCELLED,
  GRPC_CODE,
  grpcCodeFor,
  type HttpFailure,
  invalidResponse,
  isAbortError,
  MAX_VENDOR_BODY,
  ModelFailure,
  malformedFrame,
  parseDurationSeconds,
  retryAfterFromHeaders,
  saysModelNotFound,
  transportFailure,
  UNREACHABLE_CODES,
  unreachable,
} from "./errors.ts";
export { ev, type StreamEventInit, type UsageInit } from "./events.ts";
export {
  CancelledError,
  type FetchLike,
  hostOf,
  joinUrl,
  refuseHtml,
  requestTokenCount,
  sendVendorRequest,
  type VendorRequest,
  type VendorResponse,
} from "./http.ts";
export { MAX_MERGED_CHARS, mergeBufferedDeltas } from "./merge.ts";
export { type RateLimitHeaderFamily, type ResetFormat, rateLimitsFromHeaders } from "./ratelimits.ts";
export {
  acceptedSampling,
  droppedSamplingNote,
  type SamplingChoice,
  type SamplingValues,
  samplingFor,
} from "./sampling.ts";
export {
  ANTHROPIC_TOOL_NAMES,
  GEMINI_TOOL_NAMES,
  type JsonSchemaOptions,
  OPENAI_TOOL_NAMES,
  schemaToJson,
  type ToolNameMap,
  type ToolNameRule,
  toolNameMap,
} from "./schema.ts";
export {
  type AdapterCall,
  type ConfigureContext,
  createModelService,
  type Logger,
  MODELS_JSON_ATTRIBUTE,
  type ModelAdapter,
  serveModelProvider,
} from "./serve.ts";
export { parseEventJson, readSse, type SseEvent } from "./sse.ts";
export { StopSequenceMatcher } from "./stop.ts";
export { readEvent, readValue, type WireLog, WireNotices } from "./wire.ts";
