// `agent run`: one kernel in this process, one session, and a frontend on it. With -p
// (or a prompt on stdin) the frontend is the headless printer; on a terminal it is the
// terminal UI, run in-process on this process's own TTY (see docs/decisions/cli-and-tui.md). Both are ordinary FrontendPort connections, exactly what a
// frontend plugin gets through Attach.

import { once } from "node:events";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  type AgentConfig,
  BUILTIN_CONFIG_FILE,
  builtinRootProfile,
  ConfigError,
  firstPartyName,
  kernelProtectedPaths,
  loadGlobalConfig,
  loadProjectConfig,
  parseCompactAt,
  type UserDefaults,
} from "@pluggableharness/config";
import {
  createKernel,
  type FrontendConnection,
  type Kernel,
  type KernelLogRecord,
  LOG_LEVEL_ORDER,
  type SessionHandle,
  type Tracer,
} from "@pluggableharness/kernel";
import { StoredInputs } from "@pluggableharness/kernel/render";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { pick } from "@pluggableharness/provider-tui";
import {
  assertNoOtherWriter,
  descendantCost,
  isSessionId,
  openSessionReader,
  SessionLockedError,
  tidySessionFile,
} from "@pluggableharness/state";
import { parseDuration, parsePositiveNumber } from "../duration.ts";
import { EXIT } from "../exit-codes.ts";
import {
  cancelledBeforeSession,
  HeadlessPrinter,
  type InitTool,
  type OutputFormat,
  STARTUP_INTERRUPTED,
  summarize,
} from "../headless.ts";
import { readImages } from "../images.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, CoalescingWriter, type Io, line, outputFailures, outputFailureText } from "../io.ts";
import { foundAbove, projectOf } from "../project.ts";
import {
  latestSessionOf,
  resolveSessionId,
  resumeCandidates,
  sessionLine,
  shortDirectory,
} from "../session-ids.ts";
import { RunSignals } from "../signals.ts";
import { unavailableNotice } from "../unavailable.ts";
import { startInteractive } from "./interactive-start.ts";
import { configFailure, formatLog, inProcessFrontends, logLevel } from "./kernel-start.ts";

export interface RunOptions {
  /** The headless prompt; true: -p without one (the prompt comes from stdin). */
  print?: string | true;
  /** Interactive: the first message (the positional argument). */
  message?: string;
  profile?: string;
  model?: string;
  maxTurns?: string;
  maxBudgetUsd?: string;
  maxWallClock?: string;
  /** Compaction threshold for this run: "60%" of the usable window, or a token count. */
  compactAt?: string;
  plan?: boolean;
  /** An id or unique prefix; true (the flag alone): choose from a picker. */
  resume?: string | boolean;
  continue?: boolean;
  outputFormat?: OutputFormat;
  headlessAsk?: "deny" | "allow";
  verbose?: boolean;
  /** Image files sent with the headless prompt. */
  image?: string[];
  /** Start the session under `agent serve` (started in the background if none runs) and return. */
  detach?: boolean;
}

export interface RunInput {
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(m: boolean): unknown };
  /** Ctrl-C handling installed by the caller before this module loaded (a headless run). */
  readonly signals?: RunSignals;
}

/** Reads all of a piped stdin. */
async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** Applies --model and the bound flags to a copy of the profile they run with. */
export function applyOverrides(config: AgentConfig, profileName: string, opts: RunOptions): AgentConfig {
  let idx = config.profiles.findIndex((p) => p.name === profileName);
  if (idx < 0 && profileName === "default") {
    // As in the kernel: without a "default" profile, `default` is the built-in root
    // profile (every tool of every provider, the first model that loaded).
    config = { ...config, profiles: [...config.profiles, builtinRootProfile(config)] };
    idx = config.profiles.length - 1;
  }
  if (idx < 0) {
    throw new CliError(
      `agent: no agent_profile "${profileName}" in ${config.file} (profiles: ${config.profiles.map((p) => p.name).join(", ") || "none"})`,
      EXIT.ERROR,
    );
  }
  const profile = structuredClone(config.profiles[idx]!);
  if (opts.model !== undefined) {
    const slash = opts.model.indexOf("/");
    if (slash <= 0 || slash === opts.model.length - 1) {
      throw new CliError(`--model: "${opts.model}" is not <provider>/<model id>`, EXIT.USAGE);
    }
    const provider = opts.model.slice(0, slash);
    const id = opts.model.slice(slash + 1);
    if (!config.requiredProviders.some((r) => r.localName === provider)) {
      throw new CliError(
        `--model: no provider "${provider}" in required_providers (have: ${config.requiredProviders.map((r) => r.localName).join(", ")})`,
        EXIT.USAGE,
      );
    }
    const where = profile.model?.primary ?? { range: config.requiredProviders[0]!.range };
    const ref = {
      provider,
      id,
      params: {},
      range: where.range,
      providerRange: where.range,
    } as unknown as NonNullable<typeof profile.model>["primary"];
    profile.model = { primary: ref, fallbacks: [] };
  }
  const bounds = profile as unknown as Record<string, unknown>;
  if (opts.maxTurns !== undefined)
    bounds["max_turns"] = parsePositiveNumber(opts.maxTurns, "--max-turns", true);
  if (opts.maxBudgetUsd !== undefined)
    bounds["max_cost_usd"] = parsePositiveNumber(opts.maxBudgetUsd, "--max-budget-usd");
  if (opts.maxWallClock !== undefined)
    bounds["max_wall_clock_s"] = parseDuration(opts.maxWallClock, "--max-wall-clock");
  const profiles = [...config.profiles];
  profiles[idx] = profile;
  if (opts.compactAt !== undefined) {
    const at = parseCompactAt(opts.compactAt);
    if (typeof at === "string") throw new CliError(`--compact-at: ${at}`, EXIT.USAGE);
    const settings = {
      ...config.settings,
      compaction: { ...config.settings.compaction, enabled: true, threshold: at },
    };
    return { ...config, profiles, settings };
  }
  return { ...config, profiles };
}

/**
 * The user's defaults from the global config, where neither the command line nor the
 * project says otherwise: `defaults.profile` when the project has that profile, and
 * `defaults.model` when the profile declares no model of the project's own (the built-in
 * zero-config profile counts as none) and the model's provider is loaded.
 */
export function withUserDefaults(
  config: AgentConfig,
  defaults: UserDefaults | undefined,
  opts: RunOptions,
): { profile: string; opts: RunOptions } {
  let profile = opts.profile ?? "default";
  if (opts.profile === undefined && defaults?.profile !== undefined) {
    if (config.profiles.some((p) => p.name === defaults.profile)) profile = defaults.profile;
  }
  const model = defaults?.model;
  if (opts.model !== undefined || model === undefined) return { profile, opts };
  const declared = config.profiles.find((p) => p.name === profile)?.model;
  const projectSaysSo = declared !== undefined && config.file !== BUILTIN_CONFIG_FILE;
  if (projectSaysSo || !config.requiredProviders.some((r) => r.localName === model.provider)) {
    return { profile, opts };
  }
  return { profile, opts: { ...opts, model: model.text } };
}

/**
 * The frontend plugin an interactive run is handed to (`settings.default_frontend`), or
 * undefined when the CLI's own terminal UI serves it: the setting is unset, names a
 * first-party tui the CLI runs in process, or names nothing declared (loading warned).
 */
export function pluginFrontendOf(config: AgentConfig): string | undefined {
  const name = config.settings.default_frontend;
  if (name === undefined || !config.requiredProviders.some((r) => r.localName === name)) return undefined;
  return inProcessFrontends(config).includes(name) ? undefined : name;
}

/**
 * Why the first-party frontend `name` would serve nobody as configured, if it would: the
 * web UI stays passive without a token, the tui plugin without a terminal. Handing the
 * run to it would leave the operator with no UI at all.
 */
export function idleFrontendReason(config: AgentConfig, name: string): string | undefined {
  const entry = config.requiredProviders.find((r) => r.localName === name);
  const block = config.providers.find((p) => p.name === name);
  const sets = (attr: string) =>
    block?.body.items.some((i) => i.kind === "Attribute" && i.name === attr) ?? false;
  switch (entry && firstPartyName(entry.source)) {
    case "web-ui":
      return sets("token")
        ? undefined
        : `the web UI serves nothing without a token (provider "${name}" { token = env("NAME") })`;
    case "tui":
      return sets("tty") ? undefined : `the tui plugin paints on no terminal without tty = "/dev/pts/N"`;
    default:
      return undefined;
  }
}

/** The log file of interactive sessions: the terminal belongs to the UI. */
function logFilePath(env: NodeJS.ProcessEnv): string {
  const base = env["XDG_STATE_HOME"]?.startsWith("/")
    ? env["XDG_STATE_HOME"]
    : join(env["HOME"] ?? "/tmp", ".local", "state");
  return join(base, "agent", "agent.log");
}

/** Prompt history of this directory, kept next to the log: the last 500 entries typed here. */
function promptHistory(
  env: NodeJS.ProcessEnv,
  cwd: string,
): { entries: string[]; append: (e: string) => void } {
  const file = join(dirname(logFilePath(env)), "history.jsonl");
  const entries: string[] = [];
  try {
    for (const l of readFileSync(file, "utf8").split("\n")) {
      if (!l) continue;
      try {
        const rec = JSON.parse(l) as { cwd?: unknown; text?: unknown };
        if (rec.cwd === cwd && typeof rec.text === "string") entries.push(rec.text);
      } catch {
        // a damaged line costs that entry only
      }
    }
  } catch {
    // no history yet
  }
  return {
    entries: entries.slice(-500),
    append: (text) => {
      try {
        mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
        appendFileSync(file, `${JSON.stringify({ cwd, text, at: new Date().toISOString() })}\n`, {
          mode: 0o600,
        });
      } catch {
        // history is a convenience; failing to keep it must not disturb the session
      }
    },
  };
}

/** `--resume` without an id: a picker on a terminal; the candidates (exit 2) without one. */
async function chooseSession(io: Io, input: RunInput, headless: boolean): Promise<string | undefined> {
  const { sessions, here } = resumeCandidates(io.cwd);
  if (sessions.length === 0) throw new CliError("agent: --resume: there is no session to resume", EXIT.ERROR);
  if (headless || !input.stdin.isTTY || !io.out.isTTY) {
    const lines = sessions.slice(0, 20).map((s) => `  ${sessionLine(s, !here)}`);
    throw new CliError(
      `agent: --resume needs a session id here (no terminal to choose on). ${here ? "Sessions of this directory" : "Sessions"}, newest first:\n${lines.join("\n")}${sessions.length > 20 ? `\n  … ${sessions.length - 20} more (agent sessions list)` : ""}`,
      EXIT.USAGE,
    );
  }
  return pick({
    input: input.stdin as never,
    output: io.out as never,
    title: here
      ? `Resume a session of ${shortDirectory(io.cwd)}`
      : "Resume a session (none started in this directory)",
    items: sessions.map((s) => ({ value: s.sessionId, label: sessionLine(s, !here) })),
    env: io.env,
  });
}

export async function runRun(
  io: Io,
  opts: RunOptions,
  input: RunInput = { stdin: process.stdin },
): Promise<number> {
  try {
    return await run(io, opts, input);
  } finally {
    input.signals?.dispose();
  }
}

async function run(io: Io, opts: RunOptions, input: RunInput): Promise<number> {
  const startedAt = Date.now();
  if (opts.resume && opts.continue)
    throw new CliError("--resume and --continue cannot be combined", EXIT.USAGE);
  const stdinTTY = !!input.stdin.isTTY;
  // Without a terminal, a positional message is the headless prompt; `-p` alone takes it
  // from stdin (`git diff | agent run -p`), or from the positional message.
  let prompt =
    typeof opts.print === "string" ? opts.print : opts.print || !stdinTTY ? opts.message : undefined;
  if (opts.print === true && stdinTTY && prompt === undefined) {
    throw new CliError(
      'agent run: -p needs a prompt: -p "<prompt>", or pipe one on stdin (echo "<prompt>" | agent run -p)',
      EXIT.USAGE,
    );
  }
  if (!stdinTTY) {
    // A piped prompt, or more input for -p.
    const piped = (await readAll(input.stdin)).trim();
    if (piped) prompt = prompt ? `${prompt}\n\n${piped}` : piped;
    if (prompt === undefined || prompt.trim() === "") {
      throw new CliError(
        'agent run: no prompt. Pass -p "<prompt>", pipe one on stdin, or run in a terminal for an interactive session.',
        EXIT.USAGE,
      );
    }
  }
  if (opts.detach) return runDetached(io, opts, prompt ?? opts.message);
  const headless = prompt !== undefined || opts.print !== undefined;
  if (headless && prompt!.trim() === "") throw new CliError("agent run: the prompt is empty", EXIT.USAGE);
  if (!headless && (opts.image?.length ?? 0) > 0) {
    throw new CliError(
      "--image applies to headless runs (-p); in the terminal UI, mention the image in the message: @screenshot.png",
      EXIT.USAGE,
    );
  }
  const images = readImages(opts.image ?? [], io.cwd);
  if (!headless && (opts.outputFormat ?? "text") !== "text") {
    throw new CliError("--output-format applies to headless runs (-p or a prompt on stdin)", EXIT.USAGE);
  }

  // The project (agent.hcl, .agent/, the lock) may be above the directory the session works in.
  const project = projectOf(io);
  const loaded = loadProjectConfig(project.dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  if (foundAbove(project)) line(io.err, `agent: using ${project.file} (the project's agent.hcl)`);
  const global = loadGlobalConfig({ env: io.env });
  if (!global.ok) throw configFailure(global.diagnostics);
  const chosen = withUserDefaults(loaded.config, global.config.defaults, opts);
  const profileName = chosen.profile;
  const config = applyOverrides(loaded.config, profileName, chosen.opts);
  const frontendPlugin = headless ? undefined : pluginFrontendOf(config);
  const idle = frontendPlugin && idleFrontendReason(config, frontendPlugin);
  if (idle) {
    throw new CliError(
      `agent: settings.default_frontend names "${frontendPlugin}", but ${idle}. Configure it, or remove the setting for the terminal UI.`,
      EXIT.ERROR,
    );
  }
  if (frontendPlugin !== undefined && opts.message !== undefined) {
    throw new CliError(
      `agent run: the "${frontendPlugin}" frontend serves interactive runs here (settings.default_frontend); type the message there, or use -p for a headless run`,
      EXIT.USAGE,
    );
  }

  // Logs go to a file: the terminal belongs to the UI, and a headless run's stderr carries
  // only what the run itself has to say. `--verbose` sends a headless run's logs
  // (warnings and up, or AGENT_LOG_LEVEL) to stderr as well.
  const level = logLevel(io.env, headless ? "warn" : "info");
  const logFile = logFilePath(io.env);
  const logSink =
    headless && opts.verbose
      ? (r: KernelLogRecord) => {
          if (LOG_LEVEL_ORDER[r.level] >= LOG_LEVEL_ORDER[level]) line(io.err, formatLog(r));
        }
      : (r: KernelLogRecord) => {
          if (LOG_LEVEL_ORDER[r.level] < LOG_LEVEL_ORDER[level]) return;
          try {
            mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
            appendFileSync(logFile, `${formatLog(r)}\n`, { mode: 0o600 });
          } catch {
            // logging must never take the session down
          }
        };

  // AGENT_TRACE=<file>: the kernel's trace events (turn steps, model attempts, tool calls,
  // hook dispatch) as JSON lines with a wall-clock timestamp in ms (sub-ms resolution),
  // written when the run ends.
  const trace = traceSink(io.env["AGENT_TRACE"]);

  // A session another process is running is refused before any plugin starts.
  let resumeId: string | undefined;
  if (opts.continue) resumeId = latestSessionOf(io.cwd);
  else if (opts.resume === true) {
    resumeId = await chooseSession(io, input, headless);
    if (resumeId === undefined) return EXIT.OK; // the operator chose none
  } else if (typeof opts.resume === "string") resumeId = resolveSessionId(opts.resume);
  if (resumeId && isSessionId(resumeId)) {
    try {
      assertNoOtherWriter(resumeId);
    } catch (err) {
      if (err instanceof SessionLockedError) throw new CliError(`agent: ${err.message}`, EXIT.ERROR);
      throw err;
    }
  }

  // The terminal UI takes input before the kernel and the session exist (interactive-start.ts).
  const ui =
    headless || frontendPlugin !== undefined
      ? undefined
      : startInteractive(io, input.stdin, {
          input: input.stdin,
          model: modelOf(config, profileName),
          env: io.env,
          history: promptHistory(io.env, io.cwd),
          workingDirectory: io.cwd,
          // What the UI refuses to attach: the agent's own files (git metadata is the user's).
          protectedPaths: kernelProtectedPaths(project.dir, io.env, { gitMetadata: false }),
        });
  // Plugins take a moment to start; say so on a terminal.
  const starting = !headless && !ui && !!io.out.isTTY;
  if (starting) io.out.write("⠋ Starting the agent…");
  // A headless run answers Ctrl-C from here on, start-up included (from the very start
  // when the command line installed it).
  const signals = headless ? (input.signals ?? new RunSignals()) : undefined;
  if (!headless) input.signals?.dispose();
  if (signals?.interrupted) {
    signals.dispose();
    return cancelledBeforeSession(io, opts.outputFormat ?? "text", Date.now() - startedAt);
  }
  let kernel: Kernel;
  try {
    kernel = await createKernel({
      projectDir: project.dir,
      installationRoot: installationRoot(),
      env: io.env,
      config,
      headlessAsk: opts.headlessAsk ?? "deny",
      exclude: inProcessFrontends(config),
      logSink,
      logLevel: level,
      ...(trace ? { trace: trace.tracer } : {}),
      installProgress: (l) => {
        if (ui) return ui.tui.progress(l);
        if (starting) io.out.write("\r\x1b[K");
        line(io.err, l);
      },
    });
  } catch (err) {
    signals?.dispose();
    await ui?.abandon();
    ui?.dispose();
    if (err instanceof ConfigError) throw configFailure(err.diagnostics);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  } finally {
    if (starting) io.out.write("\r\x1b[K");
  }
  if (signals?.interrupted) {
    // Interrupted before there was a session: none is created, and the run ends cancelled.
    await kernel.shutdown().catch(() => {});
    signals.dispose();
    return cancelledBeforeSession(io, opts.outputFormat ?? "text", Date.now() - startedAt);
  }
  // A server that cannot start costs the session its tools, never the session: said once.
  const warn = (w: string) =>
    ui ? ui.tui.notice(`agent: warning: ${w}`) : line(io.err, `agent: warning: ${w}`);
  for (const p of kernel.listProviders()) {
    if (p.unavailable !== undefined) warn(unavailableNotice(p.name, p.source, p.unavailable));
  }
  ui?.connect(kernel.frontends.connect({ name: "tui", interactive: true, verbose: !!opts.verbose }));

  let sessionId: string | undefined;
  try {
    let handle: SessionHandle;
    // The operator left before there was a session: none is created.
    if (ui?.tui.done) return EXIT.OK;
    try {
      // A resumed session keeps its /model choice, unless this run names its model (--model;
      // the user's defaults.model does not count: the session's own choice is newer).
      // Behind a painted prompt nobody has typed into yet: the model provider starts first.
      const contextAfterModel = !!ui;
      handle = resumeId
        ? await kernel.resumeSession(resumeId, { restoreModel: opts.model === undefined, contextAfterModel })
        : await kernel.startSession({ profile: profileName, workingDirectory: io.cwd, contextAfterModel });
    } catch (err) {
      await ui?.abandon();
      throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
    }
    sessionId = handle.id;
    // --plan turns plan mode on; without it a resumed session keeps what it recorded.
    if (opts.plan) handle.setPlanMode(true, "--plan");
    for (const w of handle.resumeWarnings) warn(w);
    const info = handle.info();
    const model =
      info.modelOverridden && resumeId && opts.model === undefined
        ? info.model
        : modelOf(config, handle.profile);
    if (headless) {
      return await runHeadless(
        io,
        kernel,
        handle,
        images.length > 0 ? [textBlock(prompt!), ...images] : prompt!,
        {
          format: opts.outputFormat ?? "text",
          verbose: !!opts.verbose,
          model,
          tools: handle.tools().filter((t) => t.offered),
          headlessAsk: opts.headlessAsk ?? "deny",
          planMode: handle.planMode(),
          signals: signals!,
        },
      );
    }
    if (frontendPlugin !== undefined) return await runOnPluginFrontend(io, kernel, handle, frontendPlugin);
    return await ui!.attach(handle, model, !!resumeId, opts.message);
  } finally {
    // The run's signal handling stays until its plugins are stopped: a Ctrl-C during the
    // shutdown must not kill the agent by default and leave them running.
    await kernel.shutdown().catch(() => {});
    signals?.dispose();
    ui?.dispose();
    // Every connection to the file is closed now: leave it as one self-contained .sqlite.
    if (sessionId) tidySessionFile(sessionId);
    trace?.close();
  }
}

/**
 * `agent run --detach`: the session is created in this project's served kernel (a
 * background `agent serve` is started when none runs) with the prompt as its first
 * message, and the command returns at once with its id; `agent attach` watches it.
 */
async function runDetached(io: Io, opts: RunOptions, prompt: string | undefined): Promise<number> {
  const unsupported = (
    [
      ["--model", opts.model],
      ["--max-turns", opts.maxTurns],
      ["--max-budget-usd", opts.maxBudgetUsd],
      ["--max-wall-clock", opts.maxWallClock],
      ["--plan", opts.plan],
      ["--resume", opts.resume],
      ["--continue", opts.continue],
    ] as const
  ).filter(([, v]) => v !== undefined && v !== false);
  if (unsupported.length > 0) {
    throw new CliError(
      `agent run --detach: ${unsupported.map(([f]) => f).join(", ")} cannot be combined with --detach (the served kernel runs the profile as agent.hcl declares it; attach to resume a session)`,
      EXIT.USAGE,
    );
  }
  if (prompt === undefined || prompt.trim() === "") {
    throw new CliError('agent run --detach needs a prompt: agent run --detach "<prompt>"', EXIT.USAGE);
  }
  const { startInBackground } = await import("./serve.ts");
  const { dial, request, targetOf } = await import("../serve/client.ts");
  const record = await startInBackground(io);
  const dialled = dial(targetOf(record));
  try {
    const events = dialled.connection.events[Symbol.asyncIterator]();
    dialled.connection.send({
      event: {
        case: "createSession",
        value: {
          requestId: "detach",
          profile: opts.profile ?? "",
          workingDirectory: io.cwd,
          initialPrompt: [{ block: { case: "text", value: { text: prompt } } }],
        },
      },
    });
    let id = "";
    try {
      const seen = await request(events, (e) => e.event.case === "sessionCreated");
      const created = seen.at(-1)!.event;
      id = created.case === "sessionCreated" ? (created.value.info?.sessionId ?? "") : "";
    } catch (err) {
      throw new CliError(`agent run --detach: ${(err as Error).message}`, EXIT.ERROR);
    }
    line(io.out, id);
    line(
      io.err,
      `Session ${id} runs under agent serve (pid ${record.pid}); watch it with: agent attach ${id.slice(0, 10)}`,
    );
    return EXIT.OK;
  } finally {
    dialled.close();
  }
}

/** Trace events kept in memory and written to `file` at the end (tracing must not slow the run). */
function traceSink(file: string | undefined): { tracer: Tracer; close(): void } | undefined {
  if (!file) return undefined;
  const lines: string[] = [];
  return {
    tracer: (e) => {
      lines.push(
        JSON.stringify({ t: Number((performance.timeOrigin + performance.now()).toFixed(3)), ...e }),
      );
    },
    close: () => {
      try {
        writeFileSync(file, lines.length > 0 ? `${lines.join("\n")}\n` : "", { mode: 0o600 });
      } catch {
        // a trace is a diagnostic; failing to write it must not fail the run
      }
    },
  };
}

function textBlock(text: string): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: { case: "text", value: { $typeName: "pluggableharness.content.v1.TextBlock", text } },
  };
}

function modelOf(config: AgentConfig, profileName: string): string {
  const primary = config.profiles.find((p) => p.name === profileName)?.model?.primary;
  return primary ? `${primary.provider}/${primary.id}` : "";
}

/** Waits for the attach answer (session_attached … backfill_complete), dropping the backfill. */
async function attach(
  conn: FrontendConnection,
  sessionId: string,
  events: AsyncIterator<ServerEvent>,
): Promise<void> {
  conn.send({ event: { case: "attachSession", value: { requestId: "attach", sessionId } } });
  for (;;) {
    const next = await events.next();
    if (next.done) throw new CliError("agent: the kernel closed the session before it started", EXIT.ERROR);
    const e = next.value.event;
    if (e.case === "error")
      throw new CliError(`agent: ${e.value.error?.message ?? "attach failed"}`, EXIT.ERROR);
    if (e.case === "backfillComplete") return;
  }
}

async function runHeadless(
  io: Io,
  kernel: Kernel,
  handle: SessionHandle,
  prompt: string | ContentBlock[],
  o: {
    format: OutputFormat;
    verbose: boolean;
    model: string;
    tools: InitTool[];
    headlessAsk: string;
    planMode: boolean;
    signals: RunSignals;
  },
): Promise<number> {
  const started = Date.now();
  // One write per event-loop turn instead of one per record (a delta each in stream-json).
  const out = new CoalescingWriter(io.out);
  const printer = new HeadlessPrinter({ ...io, out }, o.format, o.verbose);
  const conn = kernel.frontends.connect({
    name: "headless",
    interactive: false,
    // Only --verbose prints renders. stream-json prints records read back from the session
    // file, and a render is its cue that an event was persisted: the kernel's own renderer
    // is enough for that, so no plugin is asked to Render in the middle of a turn.
    renders: o.verbose ? "producer" : o.format === "stream-json" ? "generic" : "none",
    // The cue is needed for every persisted event, context contributions included.
    verbose: o.verbose || o.format === "stream-json",
  });
  const events = conn.events[Symbol.asyncIterator]();
  await attach(conn, handle.id, events);
  printer.init({
    sessionId: handle.id,
    model: o.model,
    tools: o.tools,
    profile: handle.profile,
    cwd: io.cwd,
    headlessAsk: o.headlessAsk,
    planMode: o.planMode,
  });
  const reader = openSessionReader(handle.id);
  const startSequence = reader.lastSequence();
  let lastSequence = startSequence;
  const inputs = new StoredInputs();
  const drainPersisted = () => {
    const fresh = reader.readEvents({ afterSequence: lastSequence }).map((e) => inputs.restore(e));
    if (fresh.length > 0) lastSequence = fresh.at(-1)!.sequence;
    printer.persisted(fresh);
  };
  let detail = "";
  // Ctrl-C / SIGTERM: cancel the run (recorded as cancelled); a second one exits at once.
  o.signals.onInterrupt(() => handle.interrupt());
  // Output that cannot be written (the reader closed the pipe, the disk is full) is lost:
  // the run is interrupted as by Ctrl-C, recorded as cancelled, and the exit status is 1.
  let outputError: NodeJS.ErrnoException | undefined;
  const stopWatchingOutput = outputFailures.listen((err) => {
    if (outputError) return;
    outputError = err;
    handle.interrupt();
  });
  const pump = (async () => {
    for (;;) {
      const next = await events.next();
      if (next.done) return;
      const ev = next.value;
      // Structured records for what was persisted first, so a tool result precedes its render.
      if (ev.event.case === "render" || ev.event.case === "sessionStatusUpdate") drainPersisted();
      if (ev.event.case === "sessionStatusUpdate" && ev.event.value.detail) detail = ev.event.value.detail;
      printer.event(ev);
      // Backpressure: a reader slower than the run holds the next record back, in the
      // kernel's queue, rather than piling the printed lines up here.
      if (out.writableNeedDrain) await once(out, "drain");
    }
  })();
  try {
    // Interrupted while starting: the prompt is never sent, and the run ends cancelled.
    const cancelledEarly = o.signals.interrupted;
    if (cancelledEarly) detail = STARTUP_INTERRUPTED;
    else handle.send(prompt);
    const status = cancelledEarly ? SessionStatus.CANCELLED : await handle.idle();
    // Shutting down delivers the session's queued events and then ends the connection,
    // before it stops the plugins: the result goes out while they stop.
    const down = kernel.shutdown();
    down.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
    await pump;
    drainPersisted();
    const summary = summarize(
      reader,
      handle.id,
      status,
      detail,
      Date.now() - started,
      startSequence,
      descendantCost(handle.id, { sinceMs: started, log: () => {} }),
    );
    const exit = printer.result(summary);
    out.flushNow();
    await down;
    if (outputError) {
      line(io.err, `agent: ${outputFailureText(outputError)}; session ${handle.id} was interrupted`);
      return EXIT.ERROR;
    }
    return exit;
  } finally {
    stopWatchingOutput();
    out.close();
    reader.close();
    conn.close();
  }
}

/**
 * An interactive run handed to a frontend plugin (`settings.default_frontend`): the
 * plugin, launched with the kernel, attaches over the frontend protocol and serves the
 * operator; this terminal draws no UI of its own and only holds the run open until
 * Ctrl-C or SIGTERM.
 */
async function runOnPluginFrontend(
  io: Io,
  kernel: Kernel,
  handle: SessionHandle,
  name: string,
): Promise<number> {
  const status = kernel.listProviders().find((p) => p.name === name);
  if (!status?.categories.includes("frontend")) {
    throw new CliError(
      `agent: settings.default_frontend names "${name}", which is not a frontend provider (it serves ${status?.categories.join(", ") || "nothing"}); name a frontend, or remove the setting for the terminal UI`,
      EXIT.ERROR,
    );
  }
  line(
    io.err,
    `agent: session ${handle.id} is served by the "${name}" frontend (settings.default_frontend). Ctrl-C here ends the run.`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  return EXIT.OK;
}

export { resumeHint } from "./interactive-start.ts";
