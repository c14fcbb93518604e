// Public API of @pluggableharness/config. See README.md.

export {
  type CommandPattern,
  exactCommandPatterns,
  type PathPattern,
  PatternError,
  parseCommandPattern,
  parsePathPattern,
  pathMatches,
  pathRelativeTo,
  patternMatchesArgv,
} from "./arg-match.ts";
export {
  BUILTIN_CRITICAL_RULE,
  BUILTIN_PIPE_TO_SHELL_RULE,
  BUILTIN_READ_ONLY_RULE,
  builtinDefaultRules,
  builtinDenyRules,
  isReadOnlyCommand,
} from "./builtin-rules.ts";
export {
  attributeRange,
  type ConfigureProblem,
  configureDiagnostics,
  providerRange,
} from "./configure-diagnostics.ts";
export {
  type Capabilities,
  detectCapabilities,
  detectLsp,
  explorerTools,
  type LspSetup,
  SUBAGENT_PROFILES,
} from "./default-capabilities.ts";
export {
  BUILTIN_CONFIG_FILE,
  chooseVendor,
  DEFAULT_TOOL_PROVIDERS,
  defaultConfigSource,
  lspMaps,
  requiredProviderNames,
} from "./defaults.ts";
export {
  type ConfigDiagnostic,
  ConfigError,
  type DiagnosticCategory,
  type DiagnosticSeverity,
  errorAt,
  errorsOf,
  formatDiagnostic,
  formatDiagnostics,
  hasErrors,
} from "./diagnostics.ts";
export {
  DEFAULT_SECRET_PATTERNS,
  type ExecEnvironment,
  envNamesReadByConfig,
  execEnvironment,
  withheldValues,
} from "./exec-env.ts";
export { type FleetUrls, resolveFleetUrls } from "./fleet.ts";
export { gitMetadataPaths } from "./git-paths.ts";
export {
  type ConfigLogger,
  type DevOverride,
  devOverridePaths,
  type GlobalConfig,
  type GlobalLoadOptions,
  type GlobalLoadResult,
  globalConfigPath,
  loadGlobalConfig,
  mirrorFor,
  parseGlobalConfig,
  type RegistryMirror,
  type UserDefaults,
} from "./global.ts";
export { HOOK_MODES, HOOK_POINTS, hookPointName, VETO_POINTS } from "./hooks.ts";
export {
  CONFIG_FILE,
  defaultConfig,
  type LoadOptions,
  type LoadResult,
  loadConfigSource,
  loadProjectConfig,
  loadProjectConfigOrThrow,
  TOP_LEVEL_BLOCKS,
} from "./load.ts";
export {
  ANY_PLATFORM,
  LOCK_FILE,
  LOCK_FILE_VERSION,
  type LockEntry,
  type LockFile,
  type LockReadResult,
  parseLockFile,
  platformKey,
  readLockFile,
  renderLockFile,
  updateLock,
  verifyLock,
  writeLockFile,
} from "./lockfile.ts";
export { isSecretName, MCP_BRIDGE_SOURCES, mcpSecretDiagnostics } from "./mcp-secrets.ts";
export type * from "./model.ts";
export {
  describeMatch,
  findPolicyConflicts,
  MATCH_KINDS,
  matchesConflict,
  POLICY_ACTIONS,
  RISK_NAMES,
  type SpecificityTuple,
  specificity,
} from "./policy.ts";
export {
  type ArgumentScope,
  type CallKind,
  callKindOf,
  defaultAction,
  humanRule,
  matchesCall,
  mostSpecific,
  narrowestScope,
  type PolicyCall,
  PolicyEngine,
  type PolicyEngineOptions,
  type PolicyEvaluation,
  type PolicyLayer,
  type RememberScope,
  riskNameOf,
  toPlanDecision,
} from "./policy-engine.ts";
export {
  loadAlwaysRules,
  POLICY_STORE_FILE,
  PolicyStoreError,
  recordAlwaysDecision,
  removeAlwaysRule,
  renderPolicyStore,
  type StoreReadResult,
} from "./policy-store.ts";
export { parseToolPattern } from "./profiles.ts";
export { findProjectDir, type ProjectLocation } from "./project-dir.ts";
export {
  type FollowedPath,
  followLinksSync,
  kernelProtectedPaths,
  type ProtectedHit,
  type ProtectedMatch,
  type ProtectedSet,
  protectedHitOf,
  protectedMatchOf,
  protectedPathOf,
  protectedSet,
} from "./protected-paths.ts";
export {
  FIRST_PARTY_SHIPPED,
  firstPartyChecksum,
  packageChecksum,
  type ResolvedProvider,
  type ResolveOptions,
  type ResolveResult,
  resolveProvider,
  resolveProviders,
} from "./resolve.ts";
export { type SamplingParamName, samplingParamsOf, samplingRefusal } from "./sampling.ts";
export {
  type DecodedProviderConfig,
  type DecodeResult,
  decodeProviderBody,
  decodeProviderConfig,
  decodeProviderConfigOrThrow,
  redactedValues,
  type SchemaAttribute,
  type SchemaLike,
  toStruct,
  validateConfigSchema,
} from "./schema-bridge.ts";
export {
  DEFAULT_MARKER,
  MIN_ENCODED_LENGTH,
  MIN_LITERAL_LENGTH,
  SecretMask,
  type SecretMaskOptions,
  secretForms,
} from "./secret-mask.ts";
export { credentialVariables, type Environment, envShape, Secret } from "./secrets.ts";
export {
  DEFAULT_COMPACTION,
  DEFAULT_MAX_MODEL_WAIT_MS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_OBSERVABILITY,
  DEFAULT_RETRY,
  DEFAULT_STREAM_IDLE_TIMEOUT_MS,
  defaultSettings,
  parseCompactAt,
} from "./settings.ts";
export {
  basename as shellBasename,
  type ParsedCommand,
  parseCommand,
  type ShellWord,
  type SimpleCommand,
  shellQuote,
} from "./shell.ts";
export {
  checkSourceAddress,
  FIRST_PARTY_OWNER,
  FIRST_PARTY_PROVIDERS,
  type FirstPartyName,
  firstPartyName,
  firstPartySource,
  isForgeSource,
} from "./source-address.ts";
export { closest, didYouMean, distance } from "./suggest.ts";
export {
  builtinRootProfile,
  getProfile,
  type LoadedProviders,
  type ProviderFacts,
  resolveProfileTools,
  unavailableReason,
  validateAgainstProviders,
} from "./validate.ts";
export {
  type ConstraintOp,
  formatConstraints,
  parseConstraints,
  satisfies,
  selectVersion,
  type VersionConstraint,
} from "./version.ts";
