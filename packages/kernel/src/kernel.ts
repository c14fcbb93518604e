// createKernel: configuration, providers, policy, hooks, sessions and the frontend hub,
// put together. The CLI creates one kernel per process; the headless printer and the
// terminal UI talk to it through `frontends` (FrontendPort), plugins through the
// callback service each of them is given.
import { existsSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import {
  type AgentConfig,
  type AgentProfile,
  ConfigError,
  devOverridePaths,
  envNamesReadByConfig,
  errorsOf,
  execEnvironment,
  type GlobalConfig,
  getProfile,
  kernelProtectedPaths,
  loadAlwaysRules,
  loadGlobalConfig,
  loadProjectConfig,
  PolicyEngine,
  type ResolvedProvider,
  readLockFile,
  resolveProviders,
  SecretMask,
  updateLock,
  verifyLock,
  withheldValues,
  writeLockFile,
} from "@pluggableharness/config";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { HookErrorEventSchema } from "@pluggableharness/protocol/event";
import { FrontendErrorCategory } from "@pluggableharness/protocol/frontend";
import type { HookError } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import {
  type Fetch,
  installProviders,
  needsForge,
  readProducers,
  writeProducers,
} from "@pluggableharness/registry";
import {
  type CallbackPeer,
  type CrashReport,
  commandHiddenPaths,
  discardPrelaunched,
  type LaunchContext,
  type PluginLogRecord,
  prelaunchPlanFileInUse,
  type SpawnedSpec,
  writePrelaunchPlan,
} from "@pluggableharness/runtime";
import {
  createSession,
  hookErrorProducer,
  isSessionId,
  kernelProducer,
  listSessions,
  openSessionReader,
  openSessionWriter,
  REOPENABLE_STATUSES,
  REPLAY_ONLY_STATUSES,
  SchemaTooNewError,
  SessionLockedError,
  SessionNotFoundError,
  type SessionReader,
  type SessionWriter,
} from "@pluggableharness/state";
import { InvocationTracker } from "./callbacks/invocations.ts";
import { callbackImplementation } from "./callbacks/service.ts";
import { defaultTokenCountFile, TokenCountCache } from "./callbacks/token-counts.ts";
import { type KernelClock, systemClock } from "./clock.ts";
import { ToolLocks, ulidGenerator } from "./domain/index.ts";
import { attachHandler, frontendsOnly } from "./frontends/attach.ts";
import { SessionChannel } from "./frontends/channel.ts";
import {
  type CreateSessionRequest,
  FrontendHub,
  FrontendRequestError,
  type HubSession,
  type ListSessionsRequest,
  type SessionService,
} from "./frontends/hub.ts";
import { EventRenderer } from "./frontends/renderer.ts";
import { StoredInputs } from "./frontends/stored-inputs.ts";
import { HookDispatcher } from "./hooks/dispatcher.ts";
import { discardLog, KernelLogger, type KernelLogLevel, type KernelLogSink } from "./log.ts";
import { DEFAULT_LIMITS, type LoopDeps, type LoopLimits } from "./loop/deps.ts";
import type { FrontendPort } from "./loop/frontend-port.ts";
import type { DirectInvokeOutcome, InvocationOrigin } from "./loop/session/direct-invoke.ts";
import { runSessionRun } from "./loop/session/driver.ts";
import { type RebuiltConversation, repairInterrupted } from "./loop/session/resume.ts";
import { profileCandidates, Session, type SubagentInit } from "./loop/session/session.ts";
import { restoreSettings, setPlanMode } from "./loop/session/session-settings.ts";
import {
  implicitMemorySubscriptions,
  implicitWidgetSubscriptions,
  widgetFeedView,
} from "./loop/session/widgets.ts";
import { type SessionToolInfo, ToolRegistry } from "./loop/tool-registry.ts";
import { routeCandidates } from "./loop/turn/model-call.ts";
import type { VendorThrottle } from "./loop/vendor-throttle.ts";
import { MemoryAudit, memorySources } from "./memory/audit.ts";
import { DescribeCache, defaultDescribeCacheDir } from "./plugins/describe-cache.ts";
import { noteLaunch } from "./plugins/launch-log.ts";
import { PluginPool, type PoolOwner } from "./plugins/pool.ts";
import { ProviderRegistry, type ProviderStatus } from "./plugins/providers.ts";
import { withReplayBuilds } from "./plugins/replay-builds.ts";
import type { InProcessPluginFactory } from "./providers/in-process.ts";
import { runSubagent } from "./subagents/run-session.ts";
import { createTelemetry, noTelemetry, type Telemetry } from "./telemetry/index.ts";
import { noTrace, type Tracer } from "./trace.ts";
import { KERNEL_VERSION } from "./version.ts";

export interface KernelOptions {
  /** The project: where agent.hcl, .agent/ and relative paths live. */
  readonly projectDir: string;
  /** The installation root holding first-party providers (providers/<name>/). */
  readonly installationRoot: string;
  /** Environment for env() in agent.hcl and the global config path (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Sessions directory (default: $XDG_STATE_HOME/agent/sessions). */
  readonly stateDir?: string;
  /** Where the kernel's and the plugins' log records go (default: discarded). */
  readonly logSink?: KernelLogSink;
  /** Minimum level passed to the sink (default: settings.log_level). */
  readonly logLevel?: KernelLogLevel;
  /**
   * How an `ask` resolves when no interactive frontend is attached: deny (default), allow,
   * or wait (`agent serve`: it stays pending until a frontend attaches, or an interrupt).
   */
  readonly headlessAsk?: "deny" | "allow" | "wait";
  /** Local name -> executable, on top of the global config's dev_overrides. */
  readonly devOverrides?: Readonly<Record<string, string>>;
  /** Read $XDG_CONFIG_HOME/agent/config.hcl (default true). */
  readonly globalConfig?: boolean;
  /** Providers not to launch (e.g. the terminal UI in a headless run). */
  readonly exclude?: readonly string[];
  /**
   * Cached builds loaded besides agent.hcl's providers, under names of their own, so
   * events they produced render through their own Render (`agent sessions replay` of a
   * session written before an upgrade). Not in the lock; no profile names them.
   */
  readonly replayBuilds?: readonly ResolvedProvider[];
  /** Run without providers that fail to load instead of failing (default false). */
  readonly tolerateProviderFailures?: boolean;
  /** Share plugin processes with other kernels (tests); the kernel then never stops them. */
  readonly pool?: PluginPool;
  /** A configuration already loaded (skips reading agent.hcl). */
  readonly config?: AgentConfig;
  readonly clock?: KernelClock;
  readonly trace?: Tracer;
  /**
   * false: the discarding telemetry backend whatever settings{} says (replay must never
   * export); otherwise settings.telemetry and observability{} decide (telemetry/).
   */
  readonly telemetry?: false;
  /** Session file durability (default "full"; "normal" for tests). */
  readonly durability?: "full" | "normal";
  /**
   * Where providers' static descriptions are cached (describe-cache.ts), so a provider
   * with an entry is launched only when first used; false launches every provider at
   * start. Default: $XDG_CACHE_HOME/agent/describe from `env`.
   */
  readonly describeCache?: string | false;
  /** Run first-party providers from their up-to-date bundles (default: unless AGENT_NO_BUNDLES=1). */
  readonly bundles?: boolean;
  /**
   * Providers (by local name) to run in the kernel's own thread through the in-process
   * transport instead of launching them (providers/in-process.ts): for tests and
   * embedding, never for isolation.
   */
  readonly inProcessProviders?: Readonly<Record<string, InProcessPluginFactory>>;
  /**
   * Run every first-party provider as a process ("process") or in a worker thread
   * ("worker"), whatever agent.hcl or its package says. Default: AGENT_PLUGIN_ISOLATION
   * from `env` when set, else each provider's own isolation. Other providers are always
   * processes.
   */
  readonly isolation?: "process" | "worker";
  /**
   * Where exact token counts persist between runs (callbacks/token-counts.ts); false keeps
   * them for this kernel only. Default: $XDG_CACHE_HOME/agent/token-counts.json from `env`.
   */
  readonly tokenCountCache?: string | false;
  /**
   * Where to record the processes the first session starts, for the next run to prelaunch
   * (runtime prelaunch.ts); false records nothing. Default: the plan file bin/agent.mjs
   * chose for this process, if any.
   */
  readonly prelaunchPlan?: string | false;
  readonly limits?: Partial<LoopLimits>;
  /**
   * Told each step of installing a git-forge provider the cache lacks ("Downloading …",
   * "Installed …"); `agent run` prints them on stderr.
   */
  readonly installProgress?: (line: string) => void;
  /** The fetch forge downloads use (tests). */
  readonly fetch?: Fetch;
  /** Pacing of model calls shared with other kernels (fleet workers): loop/vendor-throttle.ts. */
  readonly vendorThrottle?: VendorThrottle;
  /**
   * Resource attributes every span, metric point and log record of this kernel carries, over
   * observability{}'s own (a fleet task's batch, task and attempt). Ignored when telemetry is off.
   */
  readonly telemetryResource?: Readonly<Record<string, string>>;
}

export interface StartSessionOptions {
  /** Agent profile (default "default"). */
  readonly profile?: string;
  /** Default: the project directory. */
  readonly workingDirectory?: string;
  /** The first user message; without one the session waits for send(). */
  readonly prompt?: string | readonly ContentBlock[];
  /** Withhold resource tools from the model (plan mode). */
  readonly planMode?: boolean;
  /**
   * Start the context and memory providers once the model providers are up, one after
   * another, rather than alongside them (an interactive run: nobody has typed yet, so the
   * model provider gets the cores first; a turn that comes sooner starts them itself).
   */
  readonly contextAfterModel?: boolean;
}

export interface ResumeSessionOptions {
  /**
   * false: leave the session's recorded /model choice out of this run (it stays recorded),
   * for a run that names its own model (`agent run --resume --model`). Default true.
   */
  readonly restoreModel?: boolean;
  /**
   * Start the context and memory providers once the model providers are up, one after
   * another, rather than alongside them (an interactive run: nobody has typed yet, so the
   * model provider gets the cores first; a turn that comes sooner starts them itself).
   */
  readonly contextAfterModel?: boolean;
}

/** A session driven through the API rather than a frontend connection. */
export interface SessionHandle {
  readonly id: string;
  readonly profile: string;
  status(): SessionStatus;
  info(): SessionInfo;
  /** A user message: starts a run, queues behind the current one, or re-opens a completed/cancelled session. */
  send(prompt: string | readonly ContentBlock[]): void;
  /** Cancels the current run (model stream and running tools); the session records `cancelled`. */
  interrupt(): void;
  /**
   * "Compact now" (what /compact does): queued like a message, one compaction pass over the
   * history with reason OPERATOR and no model turn. Returns why it cannot run, if it cannot.
   */
  compact(instructions?: string): string | undefined;
  /**
   * Plan mode on or off; a change is recorded in the session file (with `origin`, e.g.
   * "--plan"), so a resume keeps it.
   */
  setPlanMode(on: boolean, origin?: string): void;
  planMode(): boolean;
  /**
   * What resuming had to change in what the session recorded (its /model choice can no
   * longer be served, so it runs on its profile's chain): one line each, for the operator.
   */
  readonly resumeWarnings: readonly string[];
  /**
   * The session's tools as resolved from its profile, in profile order, under the names the
   * model sees, with kind and risk; `offered` is false for what plan mode withholds now.
   */
  tools(): SessionToolInfo[];
  /** Resolves with the status once no run is active and nothing is queued. */
  idle(): Promise<SessionStatus>;
  /**
   * The session's tools with what a client needs to call them: description and the input
   * and output JSON Schemas (the common subset), under the names the model sees.
   */
  toolDefinitions(): SessionToolDefinition[];
  /**
   * Calls one of the session's tools without a model turn (`agent mcp serve`): through
   * pre-tool-call hooks, policy, the plan/apply gate (an ask resolves as headlessAsk says
   * when no frontend is attached) and post hooks, like a model's call; resolves with what
   * it came to. Throws FrontendRequestError when the call is refused before it runs
   * (an unknown tool, arguments that do not match its schema).
   */
  invoke(name: string, args: JsonObject, origin: InvocationOrigin): Promise<DirectInvokeOutcome>;
}

export interface SessionToolDefinition extends SessionToolInfo {
  readonly description: string;
  readonly inputSchema: JsonObject;
  readonly outputSchema: JsonObject;
}

export interface Kernel {
  readonly frontends: FrontendPort;
  readonly config: AgentConfig;
  startSession(options?: StartSessionOptions): Promise<SessionHandle>;
  /**
   * Loads a session to continue it (COMPLETED, CANCELLED or FAILED ones re-open on the next
   * send), with the model choice and plan mode it recorded.
   */
  resumeSession(sessionId: string, options?: ResumeSessionOptions): Promise<SessionHandle>;
  listProviders(): readonly ProviderStatus[];
  /** The loaded memory providers' records, as the operator audits them (`agent memory`). */
  readonly memory: MemoryAudit;
  /** The sessions this kernel holds open (their writer), with how many frontends each has attached. */
  liveSessions(): { readonly sessionId: string; readonly frontends: number }[];
  /** Cancels running sessions, closes every connection and stops the plugins this kernel owns. */
  shutdown(): Promise<void>;
}

/** A session that cannot run here (another kernel's, a profile gone from agent.hcl): replay only. */
class ArchivedSession implements HubSession {
  readonly id: string;
  readonly channel: SessionChannel;
  readonly #dir: string | undefined;
  #status: SessionStatus;

  constructor(
    id: string,
    dir: string | undefined,
    renderer: EventRenderer,
    log: KernelLogger,
    reader: SessionReader,
  ) {
    this.id = id;
    this.#dir = dir;
    this.#status = reader.meta().status;
    this.channel = new SessionChannel(id, (e) => renderer.render(e), log);
    this.channel.resumeAfter(reader.lastSequence());
  }

  #reader(): SessionReader {
    return openSessionReader(this.id, this.#dir ? { dir: this.#dir } : {});
  }

  info(): SessionInfo {
    const r = this.#reader();
    try {
      return r.info();
    } finally {
      r.close();
    }
  }

  status(): SessionStatus {
    return this.#status;
  }

  openBackfill() {
    const r = this.#reader();
    return {
      events: (through: number) => new StoredInputs().all(r.events({ throughSequence: through })),
      close: () => r.close(),
    };
  }

  slashCommands() {
    return undefined;
  }
}

function textPrompt(prompt: string | readonly ContentBlock[]): ContentBlock[] {
  if (typeof prompt !== "string") return [...prompt];
  return [
    {
      $typeName: "pluggableharness.content.v1.ContentBlock",
      block: { case: "text", value: { $typeName: "pluggableharness.content.v1.TextBlock", text: prompt } },
    },
  ];
}

class KernelImpl implements Kernel, PoolOwner, SessionService {
  readonly config: AgentConfig;
  readonly frontends: FrontendHub;
  readonly #options: KernelOptions;
  readonly #pool: PluginPool;
  readonly #ownsPool: boolean;
  readonly #log: KernelLogger;
  readonly #sessions = new Map<string, Session>();
  readonly #tracker = new InvocationTracker();
  readonly #renderer: EventRenderer;
  readonly #kernelProducer = kernelProducer(KERNEL_VERSION);
  readonly #tokenCounts: TokenCountCache;
  #providers: ProviderRegistry | undefined;
  #deps: LoopDeps | undefined;
  #closed = false;
  #planned = false;

  readonly #secretMask: SecretMask;
  readonly #telemetry: Telemetry;

  constructor(
    options: KernelOptions,
    config: AgentConfig,
    log: KernelLogger,
    secretMask: SecretMask,
    telemetry: Telemetry = noTelemetry,
  ) {
    this.#options = options;
    this.#telemetry = telemetry;
    this.config = config;
    this.#log = log;
    this.#secretMask = secretMask;
    this.#pool = options.pool ?? new PluginPool();
    this.#ownsPool = options.pool === undefined;
    this.#renderer = new EventRenderer(() => this.#providers, log.child("render"));
    const countsFile = options.tokenCountCache ?? defaultTokenCountFile(options.env ?? process.env);
    this.#tokenCounts = new TokenCountCache(countsFile === false ? undefined : countsFile);
    this.frontends = new FrontendHub(this, log.child("frontends"));
  }

  async init(resolved: Parameters<typeof ProviderRegistry.load>[0]["resolved"]): Promise<void> {
    const env = this.#options.env ?? process.env;
    const cacheDir = this.#options.describeCache ?? defaultDescribeCacheDir(env);
    const providers = await ProviderRegistry.load({
      config: this.config,
      resolved,
      pool: this.#pool,
      owner: this,
      env,
      log: this.#log.child("providers"),
      installationRoot: this.#options.installationRoot,
      bundles: this.#options.bundles ?? env["AGENT_NO_BUNDLES"] !== "1",
      ...isolationOverride(this.#options.isolation, env),
      ...(cacheDir === false ? {} : { describeCache: new DescribeCache(cacheDir) }),
      ...(this.#options.inProcessProviders ? { inProcess: this.#options.inProcessProviders } : {}),
      ...(this.#options.exclude ? { exclude: this.#options.exclude } : {}),
      secretMask: this.#secretMask,
      ...(this.#telemetry.active ? { traceCarrier: () => this.#telemetry.carrier() } : {}),
      ...(this.#options.tolerateProviderFailures ? { tolerateFailures: true } : {}),
    });
    this.#providers = providers;
    const always = loadAlwaysRules(this.config.projectDir);
    if (!always.ok) throw new ConfigError(errorsOf(always.diagnostics), "the ALWAYS policy store");
    const clock = this.#options.clock ?? systemClock;
    const trace = this.#options.trace ?? noTrace;
    const settings = this.config.settings;
    const hooks = new HookDispatcher({
      subscriptions: [
        ...this.config.hooks,
        ...implicitWidgetSubscriptions(this.config, providers),
        ...implicitMemorySubscriptions(this.config, providers),
      ],
      providers,
      defaultTimeoutMs: settings.default_hook_timeout_ms,
      tracker: this.#tracker,
      log: this.#log.child("hooks"),
      trace,
      telemetry: this.#telemetry,
      onHookError: (sessionId, error) => this.#recordHookError(sessionId, error),
      observeView: widgetFeedView(providers),
    });
    const newUlid = ulidGenerator(() => clock.now());
    this.#deps = {
      config: this.config,
      settings,
      providers,
      hooks,
      tracker: this.#tracker,
      renderer: this.#renderer,
      clock,
      log: this.#log.child("loop"),
      trace,
      ...(this.#options.vendorThrottle ? { throttle: this.#options.vendorThrottle } : {}),
      telemetry: this.#telemetry,
      kernelProducer: this.#kernelProducer,
      policy: new PolicyEngine(this.config.policies, { alwaysRules: always.rules }),
      projectDir: this.config.projectDir,
      protectedPaths: [
        ...kernelProtectedPaths(this.config.projectDir, this.#options.env ?? process.env, {
          gitMetadata: !settings.allow_git_metadata_writes,
        }),
        ...(this.#options.stateDir ? [this.#options.stateDir] : []),
      ],
      secretValues: this.#secretValues(),
      secretMask: this.#secretMask,
      headlessAsk: this.#options.headlessAsk ?? "deny",
      limits: {
        ...DEFAULT_LIMITS,
        maxSessionRetries: settings.retry.max_retries * 4,
        ...this.#options.limits,
      },
      locks: new ToolLocks(),
      newId: newUlid,
    };
  }

  #secretValues(): string[] {
    return withheldValues(this.config.projectDir, this.#options.env ?? process.env).filter(
      (v) => v.length >= 8,
    );
  }

  get #d(): LoopDeps {
    if (!this.#deps) throw new Error("the kernel is not initialised");
    return this.#deps;
  }

  #recordHookError(sessionId: string, error: HookError): void {
    const session = this.#sessions.get(sessionId);
    if (!session) return;
    session.log.persist(
      EventKind.HOOK_ERROR,
      hookErrorProducer(error),
      toBinary(HookErrorEventSchema, create(HookErrorEventSchema, { error })),
    );
  }

  // ---- PoolOwner -------------------------------------------------------------------------

  callbacks(peer: CallbackPeer) {
    return callbackImplementation(
      {
        session: (id) => this.#sessions.get(id),
        tracker: this.#tracker,
        providers: () => this.#providers,
        log: this.#log.child("callbacks"),
        kernelProducer: this.#kernelProducer,
        tokenCounts: this.#tokenCounts,
        control: {
          rootPolicy: () => this.#deps?.policy,
          projectDir: this.config.projectDir,
          listSessions: (workingDirectory) =>
            this.listSessions({ rootsOnly: true }).filter(
              (s) => workingDirectory === undefined || s.workingDirectory === workingDirectory,
            ),
          ...(this.#options.durability ? { durability: this.#options.durability } : {}),
        },
        runSession: (plugin, request, signal) =>
          runSubagent(
            {
              deps: this.#d,
              session: (id) => this.#sessions.get(id),
              createChild: (parent, profile, init) => this.#createChild(parent, profile, init),
              releaseChild: async (child) => {
                if (this.#sessions.get(child.id) !== child) return;
                child.widgetAbort.abort();
                await child.channel.flush();
                child.log.commit();
                this.#sessions.delete(child.id);
                child.writer.close();
              },
            },
            plugin,
            request,
            signal,
          ),
        execEnvironment: (patterns) => {
          const source = this.#options.env ?? process.env;
          const projectDir = this.config.projectDir;
          const e = execEnvironment(source, {
            configNames: envNamesReadByConfig(projectDir, source),
            patterns,
            installationRoot: this.#options.installationRoot,
            execPath: process.execPath,
          });
          return {
            ...e,
            protectedPaths: [
              ...(this.#deps?.protectedPaths ??
                kernelProtectedPaths(projectDir, source, {
                  gitMetadata: !this.config.settings.allow_git_metadata_writes,
                })),
            ],
            // As the kernel sees them: a plugin knows neither its temp nor runtime directories.
            hiddenPaths: [...new Set([...commandHiddenPaths(source), ...commandHiddenPaths()])],
          };
        },
      },
      peer,
    );
  }

  attach = (peer: CallbackPeer) =>
    frontendsOnly(peer, attachHandler(this.frontends, `plugin:${peer.plugin}`, this.#log.child("attach")));

  pluginLog(record: PluginLogRecord): void {
    this.#log.forward({
      time: record.time,
      level: record.level,
      source: "plugin",
      plugin: record.plugin,
      instance: record.instance,
      logger: record.logger || record.plugin,
      message: record.message,
      ...(Object.keys(record.fields).length > 0 ? { fields: record.fields } : {}),
    });
  }

  async pluginLaunched(name: string, launch: LaunchContext): Promise<void> {
    if (launch.launch === 1) noteLaunch(this.#options.env ?? process.env, name);
    // While the registry loads, it describes and configures what it launches itself.
    const providers = this.#providers;
    if (!providers) return;
    const configured = await providers.launched(name, launch.description, (s) => launch.client(s));
    if (configured && launch.launch > 1) {
      this.#log.info(`provider "${name}" relaunched and configured again`, { launch: launch.launch });
    }
  }

  pluginCrashed(report: CrashReport): void {
    this.#log.error(`plugin "${report.plugin}" crashed`, {
      consecutive: report.consecutive,
      repeated: report.repeated,
      error: report.error.message.split("\n")[0],
    });
  }

  // ---- SessionService (the frontend hub's side) ---------------------------------------------

  async createSession(request: CreateSessionRequest): Promise<Session> {
    return this.#create({
      profile: request.profile || "default",
      workingDirectory: request.workingDirectory,
    });
  }

  startCreated(session: HubSession, prompt: ContentBlock[]): void {
    (session as Session).runs.enqueue(prompt);
  }

  async openSession(
    sessionId: string,
    intent: "attach" | "resume",
    options: ResumeSessionOptions = {},
  ): Promise<HubSession> {
    const live = this.#sessions.get(sessionId);
    if (live) return live;
    const dir = this.#options.stateDir;
    if (!isSessionId(sessionId)) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_NOT_FOUND,
        `"${sessionId}" is not a session id`,
      );
    }
    let reader: SessionReader;
    try {
      reader = openSessionReader(sessionId, dir ? { dir } : {});
    } catch (err) {
      if (err instanceof SessionNotFoundError) {
        throw new FrontendRequestError(FrontendErrorCategory.SESSION_NOT_FOUND, `no session ${sessionId}`);
      }
      if (err instanceof SchemaTooNewError) {
        throw new FrontendRequestError(FrontendErrorCategory.SCHEMA_TOO_NEW, err.message);
      }
      throw err;
    }
    try {
      const meta = reader.meta();
      const profile = getProfile(this.config, meta.profile);
      // A sub-agent runs only inside its parent's call (its scope, budget and depth came from
      // there): on its own it can be replayed, not continued.
      const runnable =
        intent === "resume" &&
        profile !== undefined &&
        meta.parentSessionId === undefined &&
        (REOPENABLE_STATUSES.has(meta.status) || meta.status === SessionStatus.RUNNING);
      if (!runnable)
        return new ArchivedSession(sessionId, dir, this.#renderer, this.#log.child("frontends"), reader);
    } finally {
      reader.close();
    }
    let writer: SessionWriter;
    try {
      writer = openSessionWriter(sessionId, {
        ...(dir ? { dir } : {}),
        ...(this.#options.durability ? { durability: this.#options.durability } : {}),
        log: (e) => this.#log[e.level](e.message, { code: e.code }, sessionId),
      });
    } catch (err) {
      // Another process runs it: one writer per session, refused at once.
      if (err instanceof SessionLockedError)
        throw new FrontendRequestError(FrontendErrorCategory.SESSION_BUSY, err.message);
      throw err;
    }
    try {
      const profile = getProfile(this.config, writer.meta().profile)!;
      await this.#activateFor(profile, !!options.contextAfterModel);
      // The conversation the file holds, rebuilt with the session's tools (the resumed
      // session starts from it; nothing replaces it afterwards).
      let conversation: RebuiltConversation = { history: [], dangling: [] };
      const session = new Session(
        this.#d,
        {
          writer,
          profile,
          // The directory it was started in, when the file recorded one and it still exists.
          workingDirectory: recordedDirectory(writer.meta()) ?? this.config.projectDir,
          history: (tools) => {
            conversation = Session.conversationFromFile(writer, tools);
            return conversation.history;
          },
        },
        (s, input, signal) => runSessionRun(this.#d, s, input, signal),
      );
      // The operator's /model choice and plan mode, as the file last recorded them.
      session.settings.resumeWarnings = await restoreSettings(session, {
        model: options.restoreModel !== false,
      });
      if (session.status() === SessionStatus.RUNNING) {
        // This kernel holds the session's writer, so the one that ran it has stopped
        // (killed, crashed, shut down mid-run): answer what it left open, and end its run.
        if (conversation.dangling.length > 0) {
          repairInterrupted(session, conversation.dangling);
          this.#log.warn(
            `session ${session.id} was interrupted mid-turn; ${conversation.dangling.length} open tool call(s) answered as interrupted`,
            undefined,
            session.id,
          );
        }
        session.setStatus(
          SessionStatus.CANCELLED,
          "interrupted: the agent that ran it stopped before the run ended",
        );
      } else if (conversation.dangling.length > 0) {
        repairInterrupted(session, conversation.dangling);
      }
      this.#sessions.set(session.id, session);
      return session;
    } catch (err) {
      writer.close();
      throw err;
    }
  }

  listSessions(request: ListSessionsRequest): SessionInfo[] {
    const dir = this.#options.stateDir;
    if (request.parentSessionId !== undefined) {
      if (!isSessionId(request.parentSessionId)) {
        throw new FrontendRequestError(
          FrontendErrorCategory.SESSION_NOT_FOUND,
          `"${request.parentSessionId}" is not a session id`,
        );
      }
      try {
        openSessionReader(request.parentSessionId, dir ? { dir } : {}).close();
      } catch {
        throw new FrontendRequestError(
          FrontendErrorCategory.SESSION_NOT_FOUND,
          `no session ${request.parentSessionId}`,
        );
      }
    }
    return listSessions({
      ...(dir ? { dir } : {}),
      ...(request.status !== undefined ? { status: request.status } : {}),
      ...(request.parentSessionId !== undefined ? { parentSessionId: request.parentSessionId } : {}),
      ...(request.rootsOnly ? { rootsOnly: true } : {}),
    }).sessions;
  }

  async #create(options: {
    profile: string;
    workingDirectory?: string;
    contextAfterModel?: boolean;
  }): Promise<Session> {
    if (this.#closed)
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_CREATE_FAILED,
        "the kernel is shutting down",
      );
    const deps = this.#d;
    const profile = getProfile(this.config, options.profile);
    if (!profile) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_CREATE_FAILED,
        `no agent_profile "${options.profile}" in ${this.config.file}`,
      );
    }
    const wd = options.workingDirectory
      ? isAbsolute(options.workingDirectory)
        ? options.workingDirectory
        : resolve(this.config.projectDir, options.workingDirectory)
      : this.config.projectDir;
    if (!existsSync(wd) || !statSync(wd).isDirectory()) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_CREATE_FAILED,
        `working directory ${wd} is not a directory`,
      );
    }
    // Everything that can refuse the profile is checked before the session file exists.
    try {
      ToolRegistry.forProfile(profile, deps.providers);
    } catch (err) {
      throw new FrontendRequestError(FrontendErrorCategory.SESSION_CREATE_FAILED, (err as Error).message);
    }
    await this.#activateFor(profile, !!options.contextAfterModel);
    const unusable = noUsableModel(deps, profile);
    if (unusable) throw new FrontendRequestError(FrontendErrorCategory.SESSION_CREATE_FAILED, unusable);
    const dir = this.#options.stateDir;
    const writer = createSession(
      { profile: profile.name, depth: 0, workingDirectory: wd },
      {
        ...(dir ? { dir } : {}),
        ...(this.#options.durability ? { durability: this.#options.durability } : {}),
      },
    );
    const session = new Session(deps, { writer, profile, workingDirectory: wd }, (s, input, signal) =>
      runSessionRun(deps, s, input, signal),
    );
    this.#sessions.set(session.id, session);
    return session;
  }

  /** A sub-agent's session: its own file (parent_session_id, depth), registered here. */
  async #createChild(parent: Session, profile: AgentProfile, init: SubagentInit): Promise<Session> {
    if (this.#closed) throw new Error("the kernel is shutting down");
    const deps = this.#d;
    await this.#activateFor(profile);
    const unusable = noUsableModel(deps, profile);
    if (unusable) throw new Error(unusable);
    const dir = this.#options.stateDir;
    const writer = createSession(
      {
        profile: profile.name,
        depth: parent.depth + 1,
        workingDirectory: parent.workingDirectory,
        parentSessionId: parent.id,
      },
      {
        ...(dir ? { dir } : {}),
        ...(this.#options.durability ? { durability: this.#options.durability } : {}),
      },
    );
    const session = new Session(
      deps,
      { writer, profile, workingDirectory: parent.workingDirectory, parent, subagent: init },
      (s, input, signal) => runSessionRun(deps, s, input, signal),
    );
    session.settings.planMode = parent.settings.planMode;
    this.#sessions.set(session.id, session);
    return session;
  }

  /**
   * Providers described from the cache start when first used. A session's model providers
   * are started (and configured) now, since routing needs their configured models; its
   * context and memory providers start alongside, as the first turn calls them (Contribute,
   * Recall) before its first request: started here, their launch overlaps the model
   * provider's instead of following it.
   */
  async #activateFor(
    profile: NonNullable<ReturnType<typeof getProfile>>,
    contextAfterModel = false,
  ): Promise<void> {
    const providers = this.#d.providers;
    // Contribute reports a failure to start (the provider is skipped for that turn).
    if (!contextAfterModel) {
      for (const p of providers.contextAssemblers()) providers.activate(p.name).catch(() => {});
    }
    const wanted = [
      ...new Set(
        profile.model
          ? [profile.model.primary, ...profile.model.fallbacks].map((m) => m.provider)
          : providers.modelProviders().map((p) => p.name),
      ),
    ];
    const results = await Promise.allSettled(wanted.map((name) => providers.activate(name)));
    const failed = results.flatMap((r, i) =>
      r.status === "rejected" ? [`${wanted[i]}: ${(r.reason as Error).message}`] : [],
    );
    if (failed.length > 0 && !this.#options.tolerateProviderFailures) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_CREATE_FAILED,
        `a model provider failed to start:\n${failed.map((f) => `  - ${f}`).join("\n")}`,
      );
    }
    for (const f of failed) this.#log.error(`model provider failed to start: ${f}`);
    if (contextAfterModel) {
      const later = providers.contextAssemblers().map((p) => p.name);
      void (async () => {
        for (const name of later) {
          if (this.#closed) return;
          await providers.activate(name).catch(() => {});
        }
      })();
    }
    this.#recordPrelaunch([...wanted, ...providers.contextProviders().map((p) => p.name)]);
  }

  /**
   * After the first session started its providers: what the next run may prelaunch, and
   * the end of this run's prelaunched processes that were not taken over.
   */
  #recordPrelaunch(names: readonly string[]): void {
    if (this.#planned) return;
    this.#planned = true;
    const file = this.#options.prelaunchPlan ?? prelaunchPlanFileInUse();
    discardPrelaunched();
    if (!file || !existsSync(this.config.file)) return;
    const specs: SpawnedSpec[] = [];
    for (const name of new Set(names)) {
      const p = this.#d.providers.get(name);
      // Only first-party code is started before the next run has read its configuration:
      // a forge build must be verified against the lock before it ever runs.
      if (p?.resolved.origin !== "first_party") continue;
      const spec = p.host.lastSpawn;
      if (spec) specs.push(spec);
    }
    writePrelaunchPlan(file, [this.config.file], specs);
  }

  // ---- Kernel ----------------------------------------------------------------------------------

  async startSession(options: StartSessionOptions = {}): Promise<SessionHandle> {
    const session = await this.#create({
      profile: options.profile ?? "default",
      ...(options.workingDirectory ? { workingDirectory: options.workingDirectory } : {}),
      ...(options.contextAfterModel ? { contextAfterModel: true } : {}),
    });
    if (options.planMode) setPlanMode(session, true, "start");
    if (options.prompt !== undefined) session.runs.enqueue(textPrompt(options.prompt));
    return handleFor(session);
  }

  async resumeSession(sessionId: string, options: ResumeSessionOptions = {}): Promise<SessionHandle> {
    const session = await this.openSession(sessionId, "resume", options);
    if (!(session instanceof Session) && session.info().parentSessionId) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_REPLAY_ONLY,
        `session ${sessionId} is a sub-agent of ${session.info().parentSessionId}; it can only be replayed (resume its parent instead)`,
      );
    }
    if (!(session instanceof Session) || REPLAY_ONLY_STATUSES.has(session.status())) {
      throw new FrontendRequestError(
        FrontendErrorCategory.SESSION_REPLAY_ONLY,
        `session ${sessionId} ended with status ${SessionStatus[session.status()]?.toLowerCase()} and can only be replayed`,
      );
    }
    return handleFor(session);
  }

  listProviders(): readonly ProviderStatus[] {
    return this.#providers?.statuses() ?? [];
  }

  get memory(): MemoryAudit {
    return new MemoryAudit(() => memorySources(this.#providers));
  }

  liveSessions(): { sessionId: string; frontends: number }[] {
    return [...this.#sessions.values()].map((s) => ({
      sessionId: s.id,
      frontends: s.channel.subscriberCount,
    }));
  }

  async shutdown(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#sessions.values()) {
      s.runs.stop();
      s.widgetAbort.abort();
    }
    await Promise.all([...this.#sessions.values()].map((s) => s.runs.waitRun().catch(() => {})));
    // A session created without a prompt never ran; it must not stay RUNNING in its file.
    for (const s of this.#sessions.values()) {
      if (s.status() === SessionStatus.RUNNING && !s.runs.running) {
        try {
          s.setStatus(SessionStatus.CANCELLED, "the kernel shut down before the session ran");
        } catch {
          // best effort
        }
      }
    }
    await Promise.all([...this.#sessions.values()].map((s) => s.channel.flush()));
    this.frontends.closeAll();
    for (const s of this.#sessions.values()) {
      try {
        s.log.commit();
        s.writer.close();
      } catch {
        // already closed
      }
    }
    this.#sessions.clear();
    this.#tokenCounts.flush();
    this.#pool.release(this);
    if (this.#ownsPool) await this.#pool.shutdown();
    // Last, so the plugins' final records and the sessions' spans are in the flush.
    await this.#telemetry.shutdown();
  }
}

function handleFor(session: Session): SessionHandle {
  return {
    id: session.id,
    profile: session.profile.name,
    status: () => session.status(),
    info: () => session.info(),
    send: (prompt) => {
      const err = session.submit(textPrompt(prompt), { mayReopen: true });
      if (err) throw new FrontendRequestError(err.category, err.message);
    },
    interrupt: () => session.interrupt(),
    compact: (instructions = "") => session.compact(instructions, { mayReopen: true })?.message,
    setPlanMode: (on, origin = "api") => setPlanMode(session, on, origin),
    planMode: () => session.settings.planMode,
    resumeWarnings: session.settings.resumeWarnings,
    tools: () => session.tools.describe({ planMode: session.settings.planMode }),
    idle: () => session.runs.idle(),
    toolDefinitions: () => {
      const info = new Map(
        session.tools.describe({ planMode: session.settings.planMode }).map((t) => [t.name, t]),
      );
      // Operator-only tools (session controls) are not a client's to call.
      return session.tools
        .all()
        .filter((t) => !t.tool.schema.operatorOnly)
        .map((t) => ({
          ...info.get(t.declaredName)!,
          description: t.tool.schema.description,
          inputSchema: t.tool.inputJsonSchema,
          outputSchema: t.tool.outputJsonSchema,
        }));
    },
    invoke: (name, args, origin) =>
      new Promise((resolveCall, reject) => {
        const tool = session.tools.all().find((t) => t.declaredName === name && !t.tool.schema.operatorOnly);
        if (!tool) {
          reject(
            new FrontendRequestError(FrontendErrorCategory.INVALID_CLIENT_EVENT, `no tool named ${name}`),
          );
          return;
        }
        const err = session.invoke(
          {
            provider: tool.provider.name,
            toolName: tool.tool.schema.name,
            args,
            origin,
            onDone: resolveCall,
          },
          { mayReopen: true },
        );
        if (err) reject(new FrontendRequestError(err.category, err.message));
      }),
  };
}

/** A sink that masks every secret in a record's message and fields before passing it on. */
function maskedSink(sink: KernelLogSink, mask: SecretMask): KernelLogSink {
  if (mask.empty) return sink;
  return (record) => {
    const message = mask.mask(record.message);
    const fields = record.fields ? mask.maskJson(record.fields) : undefined;
    sink(
      message === record.message && fields === record.fields
        ? record
        : { ...record, message, ...(fields ? { fields } : {}) },
    );
  };
}

/** Loads the configuration, launches and configures every provider, and returns a ready kernel. */
export async function createKernel(options: KernelOptions): Promise<Kernel> {
  const env = options.env ?? process.env;
  const projectDir = resolve(options.projectDir);
  let config = options.config;
  if (!config) {
    const loaded = loadProjectConfig(projectDir, { env });
    if (!loaded.ok) throw new ConfigError(errorsOf(loaded.diagnostics));
    config = loaded.config;
  }
  // Built once: every withheld value in every form, for log records, tool output and summaries.
  const secretMask = new SecretMask(withheldValues(config.projectDir, env));
  // Log records reach the telemetry's logs signal after masking, like every other sink.
  let telemetry: Telemetry = noTelemetry;
  const baseSink = options.logSink ?? discardLog;
  const log = new KernelLogger(
    maskedSink((r) => {
      baseSink(r);
      telemetry.log(r);
    }, secretMask),
    "kernel",
    options.logLevel ?? config.settings.log_level,
  );
  if (options.telemetry !== false) {
    telemetry = await createTelemetry(
      config.settings,
      env,
      (m) => log.child("telemetry").warn(m),
      options.telemetryResource,
    );
  }
  for (const w of config.warnings) log.warn(`${w.file}:${w.line}:${w.column}: ${w.summary}: ${w.detail}`);

  let devOverrides: Record<string, string> = {};
  let global: GlobalConfig | undefined;
  if (options.globalConfig !== false) {
    const loadedGlobal = loadGlobalConfig({ env });
    if (!loadedGlobal.ok)
      throw new ConfigError(errorsOf(loadedGlobal.diagnostics), "the global configuration");
    global = loadedGlobal.config;
    devOverrides = devOverridePaths(global);
  }
  devOverrides = { ...devOverrides, ...options.devOverrides };
  const lock = readLockFile(projectDir);
  if (!lock.ok) throw new ConfigError(errorsOf(lock.diagnostics), "the lock file");

  // Git-forge providers: the locked build from the cache, verified on every start; what
  // the cache lacks is downloaded, and a provider the lock did not know yet is recorded.
  const installed: Record<string, ResolvedProvider> = {};
  let forgeEntries: Parameters<typeof updateLock>[3] | undefined;
  if (config.requiredProviders.some((r) => needsForge(r, devOverrides))) {
    const outcome = await installProviders({
      config,
      env,
      ...(global ? { global } : {}),
      lock: lock.lock,
      mode: "use",
      devOverrides,
      ...(options.installProgress ? { progress: options.installProgress } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      userAgent: `pluggableharness-agent/${KERNEL_VERSION}`,
    });
    if (errorsOf(outcome.diagnostics).length > 0) throw new ConfigError(errorsOf(outcome.diagnostics));
    for (const p of outcome.providers) installed[p.localName] = p;
    if (outcome.changed) forgeEntries = outcome.entries;
  }
  const { providers: resolved, diagnostics } = resolveProviders(config, {
    installationRoot: options.installationRoot,
    devOverrides,
    installed,
  });
  if (errorsOf(diagnostics).length > 0) throw new ConfigError(errorsOf(diagnostics));
  let current = lock.lock;
  if (forgeEntries !== undefined) {
    // The kernel writes the lock: every provider it now runs, with what it verified.
    const next = updateLock(current, resolved, new Date(), forgeEntries);
    next.file = writeLockFile(projectDir, next);
    current = next;
  }
  if (current) {
    const problems = errorsOf(verifyLock(current, resolved));
    if (problems.length > 0) throw new ConfigError(problems, "the lock file");
  }

  const replayBuilds = options.replayBuilds ?? [];
  const kernel = new KernelImpl(options, withReplayBuilds(config, replayBuilds), log, secretMask, telemetry);
  try {
    await kernel.init([...resolved, ...replayBuilds]);
  } catch (err) {
    await kernel.shutdown().catch(() => {});
    throw err;
  }
  recordForgeProducers(kernel, [...resolved, ...replayBuilds]);
  return kernel;
}

function recordedDirectory(meta: { readonly workingDirectory?: string }): string | undefined {
  const wd = meta.workingDirectory;
  return wd && existsSync(wd) && statSync(wd).isDirectory() ? wd : undefined;
}

/**
 * Next to each forge build in the cache, the identities it describes itself with, so
 * `agent providers prune` knows which cached builds a retained session was written by.
 */
function recordForgeProducers(kernel: Kernel, resolved: readonly ResolvedProvider[]): void {
  for (const status of kernel.listProviders()) {
    const r = resolved.find((x) => x.localName === status.name);
    if (r?.origin !== "forge" || !r.installDir || status.state !== "loaded") continue;
    if (readProducers(r.installDir) !== undefined) continue;
    try {
      writeProducers(
        r.installDir,
        Object.values(status.producers).map((p) => ({
          category: p.category,
          name: p.name,
          version: p.version,
        })),
      );
    } catch {
      // a read-only cache only costs prune its knowledge of this build
    }
  }
}

/** The isolation forced on every first-party provider, if any (option, else AGENT_PLUGIN_ISOLATION). */
function isolationOverride(
  option: KernelOptions["isolation"],
  env: Readonly<Record<string, string | undefined>>,
): { isolation?: "process" | "worker" } {
  const value = option ?? env["AGENT_PLUGIN_ISOLATION"];
  if (value === undefined || value === "") return {};
  if (value !== "process" && value !== "worker") {
    throw new Error(`AGENT_PLUGIN_ISOLATION must be "process" or "worker", not ${JSON.stringify(value)}`);
  }
  return { isolation: value };
}

/** Why no model of the profile's chain can serve a session now, or undefined when one can. */
function noUsableModel(deps: LoopDeps, profile: AgentProfile): string | undefined {
  const route = routeCandidates(deps, profileCandidates(profile, deps), 0, {
    inputTokens: 0n,
    messages: [],
    tools: [],
  });
  if (route.chosen) return undefined;
  return `profile "${profile.name}" has no usable model: ${route.skipped.join("; ") || "no model provider is loaded"}`;
}
