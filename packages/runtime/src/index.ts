// The kernel's plugin launcher: go-plugin host side.
export {
  type CallOptions,
  createClient,
  KERNEL_CALLBACK_BROKER_ID,
  newToken,
  PLUGGABLEHARNESS_COOKIE,
  RpcError,
  requireToken,
  type ServiceClient,
  sendToken,
  tokenMatches,
} from "@pluggableharness/goplugin";
export {
  BUNDLE_DIR,
  type BundleManifest,
  bundlePathFor,
  checkBundle,
  type FreshBundle,
  forgetBundleChecks,
  freshBundle,
  inputsDigest,
  preferBundle,
  sha256File,
} from "./bundles.ts";
export { CATEGORY_PROBES } from "./categories.ts";
export { modelErrorFor, toolErrorFor } from "./classify.ts";
export { buildEnvironment, DEFAULT_ENV_ALLOWLIST, type EnvironmentSpec } from "./env.ts";
export {
  type CrashKind,
  type LaunchFailure,
  PluginCrashedError,
  PluginLaunchError,
  PluginStoppedError,
} from "./errors.ts";
export { commandHiddenPaths, pluginHiddenPaths } from "./hidden-paths.ts";
export {
  type BackoffPolicy,
  type CrashReport,
  DEFAULT_BACKOFF,
  defaultCompileCache,
  type LaunchContext,
  PluginHost,
  type PluginHostOptions,
} from "./host.ts";
export { discover } from "./launch.ts";
export type {
  CallbackContext,
  CallbackPeer,
  CallbackRegistration,
  CategoryProbe,
  ExtraService,
  PluginDescription,
  PluginLogRecord,
} from "./plugin-types.ts";
export {
  adoptPrelaunched,
  adoptPrelaunchedWorker,
  discardPrelaunched,
  type PrelaunchPlan,
  prelaunch,
  prelaunchedCount,
  prelaunchPlanFile,
  prelaunchPlanFileInUse,
  readPrelaunchPlan,
  type SpawnedSpec,
  type StartedWorker,
  setPrelaunchPlanFile,
  startWorker,
  type ThreadSpec,
  writePrelaunchPlan,
} from "./prelaunch.ts";
export { livePluginPids, resolveCommand } from "./process.ts";
export { hostSandbox, SandboxHost, sandboxHostFor, sandboxHostPids } from "./sandbox-host.ts";
export { agentRuntimeDir, socketBase } from "./socket-dirs.ts";
export {
  ISOLATIONS,
  type LaunchedPlugin,
  type PluginIsolation,
  type PluginTransportHost,
} from "./transport.ts";
export {
  createPluginHost,
  HostedPluginHost,
  WorkerPluginHost,
  type WorkerPluginHostOptions,
} from "./worker-host.ts";
export {
  DEFAULT_WATCHDOG,
  DEFAULT_WORKER_LIMITS,
  runsInWorker,
  type WatchdogPolicy,
} from "./worker-transport.ts";
