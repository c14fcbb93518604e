// Shared building blocks of the first-party tool providers.
export {
  checkTokenBudget,
  fitLines,
  TOKEN_BUDGET_FIELD,
  type TokenCounter,
  tokenCounter,
} from "./budget.ts";
export {
  type ConfigField,
  type ConfigFieldType,
  configError,
  configSchema,
  configWarning,
  type Diagnostic,
  integerAtLeast,
  readConfig,
  rootsField,
} from "./config.ts";
export { type ContextProvider, serveContextProvider } from "./context-service.ts";
export {
  CREDENTIAL_PATH_VARIABLES,
  CREDENTIAL_STORES,
  hiddenBy,
  hiddenMessage,
  maskPlan,
  type ReadMaskStep,
  type ReadRules,
  readRuleFields,
  readRulesFrom,
  tildeName,
} from "./credentials.ts";
export {
  applyHunks,
  type DiffLine,
  diffLines,
  formatUnified,
  type Hunk,
  parseUnified,
  splitLines,
} from "./diff.ts";
export {
  CATEGORY_VALUES,
  type ErrorCategoryName,
  errorEvent,
  exitStatus,
  outputChunk,
  partialResult,
  progress,
  resultEvent,
  type ToolEventInit,
  ToolFailure,
} from "./events.ts";
export {
  DirHandle,
  Jail,
  type JailOptions,
  MAX_PATH_LENGTH,
  MAX_SYMLINK_HOPS,
  type OpenedFile,
  type ResolvedPath,
} from "./jail.ts";
export { KeyedMutex } from "./mutex.ts";
export { AsyncQueue } from "./queue.ts";
export { type RenderNodeInit, r, type StyleName } from "./render.ts";
export {
  checkValue,
  type Infer,
  type JsonSchema,
  type ObjectSchema,
  type StringSchema,
  s,
  toWireSchema,
} from "./schema.ts";
export { looksBinary, plural, truncateUtf8 } from "./text.ts";
export {
  type ConfigureContext,
  defineTool,
  type InvokeOutput,
  type KindName,
  type PreviewContext,
  type RenderInput,
  type RiskName,
  type SlashCommandSpecInit,
  serveTools,
  type ToolContext,
  type ToolDefinition,
  type ToolProviderOptions,
  toolService,
} from "./tool.ts";
