// KernelCallbackService: what plugins may ask of the kernel over the broker connection.
// The caller is the plugin the connection belongs to; nothing in a request can change
// that. Emit writes only into a session the caller is serving a call for, with a
// kernel-assigned id and sequence; Log lands in the kernel's log, attributed; CountTokens
// is exact through a model provider's own tokenizer when it has one (an exact count of a
// text already counted is answered from token-counts.ts), otherwise the one documented
// fallback; Summarize runs a compactor's summary call through the session's model chain
// (loop/turn/compaction.ts); RunSession runs a sub-agent for a spawn call the plugin is serving
// (subagents/run-session.ts).

import { status } from "@grpc/grpc-js";
import { type ServiceImpl, StatusError } from "@pluggableharness/goplugin";
import { PluginCategory, type ProducerRef } from "@pluggableharness/protocol/common";
import type {
  KernelCallbackService,
  RunSessionRequest,
  RunSessionResponse,
} from "@pluggableharness/protocol/kernel";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { LogLevel } from "@pluggableharness/protocol/log";
import type { CallbackContext, CallbackPeer } from "@pluggableharness/runtime";
import { fallbackTokenCountOfBlocks } from "../domain/index.ts";
import type { KernelLogger, KernelLogLevel } from "../log.ts";
import type { Session } from "../loop/session/session.ts";
import { SummarizeError, summarize } from "../loop/turn/compaction.ts";
import { sessionMemorySink } from "../memory/session-events.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { type ControlDeps, controlSession } from "./control.ts";
import type { InvocationTracker } from "./invocations.ts";
import { writeMemory } from "./memory-write.ts";
import { TokenCountCache } from "./token-counts.ts";

// gRPC status codes, by grpc-js's own names.
const { INVALID_ARGUMENT, FAILED_PRECONDITION, PERMISSION_DENIED, UNIMPLEMENTED, CANCELLED, UNAVAILABLE } =
  status;
const COUNT_TOKENS_TIMEOUT_MS = 10_000;

const LEVELS: Record<number, KernelLogLevel> = {
  [LogLevel.TRACE]: "trace",
  [LogLevel.DEBUG]: "debug",
  [LogLevel.INFO]: "info",
  [LogLevel.WARN]: "warn",
  [LogLevel.ERROR]: "error",
  [LogLevel.FATAL]: "fatal",
};

export interface CallbackDeps {
  readonly session: (id: string) => Session | undefined;
  readonly tracker: InvocationTracker;
  readonly providers: () => ProviderRegistry | undefined;
  readonly log: KernelLogger;
  readonly kernelProducer: ProducerRef;
  /** Exact counts already known; without one every count asks the model provider. */
  readonly tokenCounts?: TokenCountCache;
  /** Runs a child session for `plugin` (subagents/run-session.ts); absent: UNIMPLEMENTED. */
  readonly runSession?: (
    plugin: string,
    request: RunSessionRequest,
    signal: AbortSignal,
  ) => Promise<RunSessionResponse>;
  /** ExecEnvironment's answer for extra secret patterns (the env policy applied by the kernel). */
  readonly execEnvironment?: (patterns: readonly string[]) => {
    variables: Record<string, string>;
    withheld: string[];
    protectedPaths: string[];
    /** Directories the command sandbox hides (runtime and temp directories, socket bases). */
    hiddenPaths?: string[];
  };
  /** What ControlSession needs beyond the above; without it ControlSession is unavailable. */
  readonly control?: Pick<ControlDeps, "rootPolicy" | "projectDir" | "listSessions" | "durability">;
}

/** The producer to record for a plugin acting in `category`; never UNSPECIFIED. */
export function producerFor(
  producers: ReadonlyMap<string, ProducerRef>,
  category: string,
): ProducerRef | undefined {
  const own = producers.get(category);
  if (own && own.category !== PluginCategory.UNSPECIFIED) return own;
  const other = [...producers.values()].find((p) => p.category !== PluginCategory.UNSPECIFIED);
  if (!other) return undefined;
  return own ? { ...own, category: other.category } : other;
}

export function callbackImplementation(
  deps: CallbackDeps,
  peer: CallbackPeer,
): ServiceImpl<typeof KernelCallbackService, CallbackContext> {
  return {
    emit(req) {
      if (!req.sessionId) throw new StatusError(INVALID_ARGUMENT, "EmitRequest.session_id is required");
      if (req.kind === EventKind.UNSPECIFIED || EventKind[req.kind] === undefined) {
        throw new StatusError(
          INVALID_ARGUMENT,
          `EmitRequest.kind is ${req.kind === EventKind.UNSPECIFIED ? "EVENT_KIND_UNSPECIFIED" : `unknown (${req.kind})`}; set the kind of the event being persisted`,
        );
      }
      if (!req.schemaVersion)
        throw new StatusError(INVALID_ARGUMENT, "EmitRequest.schema_version is required");
      const session = deps.session(req.sessionId);
      const category = deps.tracker.categoryFor(peer.plugin, req.sessionId);
      if (!session || category === undefined) {
        throw new StatusError(
          PERMISSION_DENIED,
          `plugin "${peer.plugin}" is not serving a call for session ${req.sessionId}; Emit writes only into the session a plugin was invoked for`,
        );
      }
      const producer = producerFor(peer.producers, category);
      if (!producer) {
        throw new StatusError(
          FAILED_PRECONDITION,
          `plugin "${peer.plugin}" has no producer identity (Describe)`,
        );
      }
      const appended = session.log.persist(req.kind, producer, req.payload, {
        schemaVersion: req.schemaVersion,
      });
      return { id: appended.id, sequence: BigInt(appended.sequence) };
    },

    log(req) {
      const entry = req.entry;
      const level = entry ? LEVELS[entry.level] : undefined;
      if (!entry || !level) {
        throw new StatusError(
          INVALID_ARGUMENT,
          "LogRequest.entry.level must be one of TRACE..FATAL (UNSPECIFIED is invalid)",
        );
      }
      const ms = entry.time
        ? Number(entry.time.seconds) * 1000 + Math.floor(entry.time.nanos / 1e6)
        : Date.now();
      // FATAL is a severity label only: routed like any other entry, nothing more.
      deps.log.forward({
        time: new Date(ms),
        level,
        source: "plugin",
        plugin: peer.plugin,
        instance: peer.instance,
        logger: entry.logger || peer.plugin,
        message: entry.message,
        ...(req.sessionId ? { sessionId: req.sessionId } : {}),
        ...(entry.fields && Object.keys(entry.fields).length > 0 ? { fields: entry.fields } : {}),
      });
      return {};
    },

    async countTokens(req, ctx) {
      const textOf = req.content.map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("");
      const ref = req.modelRef;
      const provider = ref ? deps.providers()?.get(ref.provider) : undefined;
      if (ref && provider?.models?.models.has(ref.id) && provider.countTokensSupported !== false) {
        const identity = provider.producers["model"];
        const key = TokenCountCache.key(
          `${provider.resolved.source}@${identity?.version ?? provider.resolved.version ?? ""}`,
          ref.id,
          textOf,
        );
        const known = deps.tokenCounts?.get(key);
        if (known !== undefined) return { count: BigInt(known), exact: true };
        try {
          const res = await provider.ports.model.countTokens(
            { text: textOf, modelId: ref.id },
            { timeoutMs: COUNT_TOKENS_TIMEOUT_MS, signal: ctx.signal },
          );
          provider.countTokensSupported = true;
          deps.tokenCounts?.set(key, Number(res.count));
          return { count: res.count, exact: true };
        } catch (err) {
          if ((err as { code?: number }).code === UNIMPLEMENTED) provider.countTokensSupported = false;
          else {
            deps.log.debug("model provider CountTokens failed; using the fallback estimate", {
              provider: ref.provider,
              error: (err as Error).message,
            });
          }
        }
      }
      const fallback = fallbackTokenCountOfBlocks(req.content);
      return { count: BigInt(fallback.count), exact: false };
    },

    execEnvironment(req) {
      if (!deps.execEnvironment) throw new StatusError(UNIMPLEMENTED, "no exec environment is configured");
      const patterns = req.secretPatterns.filter((p) => p.trim() !== "");
      const e = deps.execEnvironment(patterns);
      deps.log.debug("a plugin asked for the exec environment", {
        plugin: peer.plugin,
        withheld: e.withheld.join(","),
      });
      return {
        variables: e.variables,
        withheld: e.withheld,
        protectedPaths: e.protectedPaths,
        hiddenPaths: e.hiddenPaths ?? [],
      };
    },

    async summarize(req, ctx) {
      if (!req.sessionId) throw new StatusError(INVALID_ARGUMENT, "SummarizeRequest.session_id is required");
      const session = deps.session(req.sessionId);
      const category = deps.tracker.categoryFor(peer.plugin, req.sessionId);
      const provider = deps.providers()?.get(peer.plugin);
      if (!session || category !== "context" || provider?.context?.compactor !== true) {
        throw new StatusError(
          PERMISSION_DENIED,
          `plugin "${peer.plugin}" may not summarise for session ${req.sessionId}: only a compactor context provider serving Contribute for that session may`,
        );
      }
      try {
        const r = await summarize(
          session.deps,
          session.compactionContext(),
          session.ports,
          session,
          {
            instructions: req.instructions,
            messages: req.messages,
            maxOutputTokens: Number(req.maxOutputTokens),
          },
          ctx.signal,
        );
        return {
          text: r.text,
          model: { provider: r.provider, id: r.modelId },
          costUsd: r.costUsd,
          inputTokens: BigInt(r.inputTokens),
          outputTokens: BigInt(r.outputTokens),
        };
      } catch (err) {
        deps.log.debug("Summarize failed", { error: (err as Error).stack ?? String(err) });
        if (err instanceof SummarizeError) {
          throw new StatusError(
            err.code === "cancelled"
              ? CANCELLED
              : err.code === "invalid_request"
                ? INVALID_ARGUMENT
                : UNAVAILABLE,
            `${err.code}: ${err.message}`,
          );
        }
        throw err;
      }
    },

    runSession(req, ctx) {
      if (!deps.runSession) throw new StatusError(UNIMPLEMENTED, "this kernel runs no sub-agent sessions");
      return deps.runSession(peer.plugin, req, ctx.signal);
    },

    describe() {
      return { producer: deps.kernelProducer };
    },

    controlSession(req) {
      if (!deps.control) throw new StatusError(UNIMPLEMENTED, "this kernel serves no session controls");
      return controlSession(
        { ...deps.control, session: deps.session, tracker: deps.tracker, providers: deps.providers },
        peer,
        req,
      );
    },

    writeMemory(req) {
      return writeMemory(
        {
          tracker: deps.tracker,
          providers: deps.providers,
          sink: (sessionId, origin) => {
            const session = deps.session(sessionId);
            return session ? sessionMemorySink(session, origin) : undefined;
          },
        },
        peer,
        req,
      );
    },
  };
}
