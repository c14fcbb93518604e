// Running one tool call: Invoke under its deadline, the stream checked by the domain's
// InvokeStreamValidator, live output forwarded to frontends, and the seed's retry rules
// (toolErrorReaction / autoRetryFor). A crashed plugin becomes a process_crashed error
// result; an interrupted turn becomes a cancelled one that still reports the output the
// tool produced before it was stopped.
import { basename } from "node:path";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import {
  type ToolCall,
  ToolCallSchema,
  type ToolError,
  ToolErrorCategory,
  ToolErrorSchema,
  type ToolEvent_ExitStatus,
  type ToolEvent_OutputChunk,
  type ToolEvent_PartialResult,
} from "@pluggableharness/protocol/tool";
import {
  InvokeStreamValidator,
  precompilePayloadSchema,
  resolveToolTimeout,
  toolErrorCategoryName,
  toolErrorReaction,
} from "../../domain/index.ts";
import type { LoadedProvider } from "../../plugins/providers.ts";
import { ProviderUnavailableError } from "../../providers/ports.ts";
import type { LoopDeps } from "../deps.ts";
import type { ToolCallScope } from "../ports.ts";
import type { SessionTool } from "../tool-registry.ts";
import { retryDelayMs } from "./retry-wait.ts";
import { ChunkMasker, maskOutcome, maskPartial, outputMask } from "./secret-output.ts";

export type ToolOutcome =
  | { readonly kind: "result"; readonly payload: JsonObject }
  | { readonly kind: "error"; readonly error: ToolError };

export interface ToolExecution {
  readonly outcome: ToolOutcome;
  readonly output: ToolEvent_OutputChunk[];
  readonly partials: ToolEvent_PartialResult[];
  readonly exitStatus?: ToolEvent_ExitStatus;
  /** Invoke attempts made (0 when the call never reached the plugin). */
  readonly attempts: number;
  readonly durationMs: number;
  /** The plugin process died during the call. */
  readonly crashed: boolean;
  readonly cancelled: boolean;
}

export interface ExecuteInput {
  /** The call as Invoke sends it; its arguments were checked by the gate (once per call). */
  readonly call: ToolCall;
  readonly turnId: string;
  readonly tool: SessionTool;
  readonly signal: AbortSignal;
}

/** What a ToolCall is built from. */
export interface ToolCallInput {
  readonly callId: string;
  readonly turnId: string;
  readonly tool: SessionTool;
  readonly args: JsonObject;
}

export function toolError(category: ToolErrorCategory, message: string, retryable = false): ToolError {
  return create(ToolErrorSchema, { category, message, retryable });
}

export function buildToolCall(
  scope: { readonly sessionId: string; readonly workingDirectory: string },
  input: ToolCallInput,
): ToolCall {
  return create(ToolCallSchema, {
    id: input.callId,
    toolName: input.tool.tool.schema.name,
    arguments: input.args,
    callContext: {
      sessionId: scope.sessionId,
      turnId: input.turnId,
      workingDirectory: scope.workingDirectory,
    },
  });
}

/** One tool call, as one span (GenAI `execute_tool`); a sub-agent it spawns runs under it. */
export function executeTool(
  deps: LoopDeps,
  scope: ToolCallScope,
  input: ExecuteInput,
): Promise<ToolExecution> {
  const t = deps.telemetry;
  const tool = `${input.tool.provider.name}.${input.tool.tool.schema.name}`;
  const mcp = mcpServer(input.tool.provider);
  return t.span(
    `execute_tool ${tool}`,
    {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "gen_ai.tool.call.id": input.call.id,
      "tool.provider": input.tool.provider.name,
      "mcp.server.name": mcp,
    },
    async (span) => {
      // A call to an MCP server's tool gets the MCP client span inside (MCP semantic
      // conventions: `tools/call <tool>`), so MCP traffic is found by its own name.
      const done = await (mcp === undefined
        ? executeToolBody(deps, scope, input)
        : t.span(
            `tools/call ${input.tool.tool.schema.name}`,
            {
              "mcp.method.name": "tools/call",
              "mcp.server.name": mcp,
              "gen_ai.tool.name": input.tool.tool.schema.name,
            },
            async (call) => {
              const r = await executeToolBody(deps, scope, input);
              if (!r.cancelled && r.outcome.kind === "error")
                call.fail(toolErrorCategoryName(r.outcome.error.category));
              return r;
            },
          ));
      const outcome = done.cancelled
        ? "cancelled"
        : done.outcome.kind === "result"
          ? "success"
          : toolErrorCategoryName(done.outcome.error.category);
      span.set({ "tool.outcome": outcome, "tool.attempts": done.attempts });
      if (outcome !== "success") span.fail(outcome);
      t.add("agent.tool.calls", 1, {
        "gen_ai.tool.name": tool,
        "tool.outcome": outcome,
        "mcp.server.name": mcp,
      });
      return done;
    },
  );
}

/** The MCP server behind a provider: the first-party mcp plugin's configured name. */
function mcpServer(provider: LoadedProvider): string | undefined {
  const r = provider.resolved;
  return r.origin === "first_party" && r.packageDir !== undefined && basename(r.packageDir) === "mcp"
    ? provider.name
    : undefined;
}

async function executeToolBody(
  deps: LoopDeps,
  scope: ToolCallScope,
  input: ExecuteInput,
): Promise<ToolExecution> {
  const started = deps.clock.now();
  const schema = input.tool.tool.schema;
  const call = input.call;
  const output: ToolEvent_OutputChunk[] = [];
  const partials: ToolEvent_PartialResult[] = [];
  // The result is checked against the output schema; its validator is compiled while the
  // call runs rather than when the first result is already waiting.
  setImmediate(precompilePayloadSchema, input.tool.tool.outputJsonSchema);
  let attempts = 0;
  let retries = 0;
  for (;;) {
    attempts++;
    const once = await invokeOnce(deps, scope, input, call, output, partials);
    const mask = outputMask(deps.secretMask, input.tool.provider);
    if (mask) once.outcome = maskOutcome(mask, once.outcome);
    const finish = (): ToolExecution => ({
      outcome: once.outcome,
      output,
      partials,
      ...(once.exitStatus ? { exitStatus: once.exitStatus } : {}),
      attempts,
      durationMs: deps.clock.now() - started,
      crashed: once.crashed,
      cancelled: once.cancelled,
    });
    if (once.outcome.kind === "result" || once.cancelled) return finish();
    const reaction = toolErrorReaction(once.outcome.error, schema, { turnAborted: input.signal.aborted });
    if (reaction.logDetails) {
      deps.log.warn(
        `tool ${input.tool.provider.name}.${schema.name} failed: ${reaction.category}`,
        {
          error: once.outcome.error.message,
          details: once.outcome.error.details,
        },
        scope.sessionId,
      );
    }
    if (!reaction.autoRetry.allowed || retries >= deps.settings.retry.max_retries || input.signal.aborted) {
      return finish();
    }
    await deps.clock.sleep(retryDelayMs(deps, retries, undefined), input.signal);
    retries++;
    if (input.signal.aborted) return finish();
  }
}

interface Once {
  outcome: ToolOutcome;
  exitStatus?: ToolEvent_ExitStatus;
  crashed: boolean;
  cancelled: boolean;
}

async function invokeOnce(
  deps: LoopDeps,
  scope: ToolCallScope,
  input: ExecuteInput,
  call: ToolCall,
  output: ToolEvent_OutputChunk[],
  partials: ToolEvent_PartialResult[],
): Promise<Once> {
  const tool = input.tool;
  const schema = tool.tool.schema;
  const timeout = resolveToolTimeout({
    pluginDefault: schema.defaultTimeout,
    globalDefaultMs: deps.settings.default_tool_timeout_ms,
  });
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = () => controller.abort(input.signal.reason);
  input.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error("tool deadline exceeded"));
  }, timeout.ms);
  const validator = new InvokeStreamValidator(tool.tool);
  const end = deps.tracker.begin(tool.provider.name, scope.sessionId, "tool");
  // The call's trace context goes with it: a sub-agent it spawns joins its span.
  const inflight = {
    tool,
    args: call.arguments ?? {},
    ended: new AbortController(),
    trace: deps.telemetry.carrier(),
  };
  scope.inflight.set(call.id, inflight);
  scope.progress(`calling ${tool.provider.name}.${schema.name}`);
  const traced = { callId: call.id, tool: `${tool.provider.name}.${schema.name}` };
  // The call, and the gate's decision on it, are on disk before the tool can act.
  scope.commit();
  deps.trace({ name: "tool.invoke", sessionId: scope.sessionId, turnId: input.turnId, attrs: traced });
  const decoder = new TextDecoder();
  // A provider handed a secret in its configuration has all it sends masked (secret-output.ts).
  const mask = outputMask(deps.secretMask, tool.provider);
  const masker = mask ? new ChunkMasker(mask) : undefined;
  const pass = (chunk: ToolEvent_OutputChunk) => {
    output.push(chunk);
    scope.publish({
      event: {
        case: "streamDelta",
        value: {
          targetId: call.id,
          text: decoder.decode(chunk.data),
          kind: StreamDeltaKind.TOOL_OUTPUT,
        },
      },
    });
  };
  try {
    for await (const res of tool.provider.ports.tool.invoke({ call }, { signal: controller.signal })) {
      const event = res.event;
      if (!event) continue;
      validator.push(event);
      const e = event.event;
      if (e.case === "outputChunk") {
        const chunk = masker ? masker.push(e.value) : e.value;
        if (chunk) pass(chunk);
      } else if (e.case === "partialResult") partials.push(mask ? maskPartial(mask, e.value) : e.value);
      if (validator.closed) break;
    }
  } catch (err) {
    if (input.signal.aborted) {
      return {
        outcome: {
          kind: "error",
          error: toolError(ToolErrorCategory.CANCELLED, "the turn was interrupted while the call ran"),
        },
        crashed: false,
        cancelled: true,
      };
    }
    if (timedOut) {
      return {
        outcome: {
          kind: "error",
          error: toolError(
            ToolErrorCategory.TIMEOUT,
            `no result within ${timeout.ms} ms (${timeout.source} deadline)`,
            true,
          ),
        },
        crashed: false,
        cancelled: false,
      };
    }
    if (err instanceof ProviderUnavailableError) {
      return {
        outcome: {
          kind: "error",
          error: toolError(
            ToolErrorCategory.PROCESS_CRASHED,
            `the ${tool.provider.name} plugin crashed during the call: ${err.message}`,
          ),
        },
        crashed: true,
        cancelled: false,
      };
    }
    return {
      outcome: { kind: "error", error: toolError(ToolErrorCategory.UNKNOWN, (err as Error).message) },
      crashed: false,
      cancelled: false,
    };
  } finally {
    // What the masker held back is passed on however the call ended.
    if (masker) for (const chunk of masker.flush()) pass(chunk);
    clearTimeout(timer);
    input.signal.removeEventListener("abort", onAbort);
    end();
    // Whatever ended the Invoke (result, crash, deadline, interrupt), its sub-agents end too.
    if (scope.inflight.get(call.id) === inflight) scope.inflight.delete(call.id);
    inflight.ended.abort(new Error("the spawning call ended"));
    scope.progress("");
    deps.trace({ name: "tool.invoked", sessionId: scope.sessionId, turnId: input.turnId, attrs: traced });
  }
  for (const v of validator.violations) {
    deps.log.warn(
      `tool ${tool.provider.name}.${schema.name} broke the Invoke stream rules: ${v.message}`,
      { rule: v.rule },
      scope.sessionId,
    );
  }
  const outcome = validator.finish();
  return {
    outcome:
      outcome.kind === "result"
        ? { kind: "result", payload: outcome.payload }
        : { kind: "error", error: outcome.error },
    ...(outcome.exitStatus ? { exitStatus: outcome.exitStatus } : {}),
    crashed: false,
    cancelled: false,
  };
}
