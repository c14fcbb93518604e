// The bridge's ToolService. Before Configure it serves no operation and says its
// operations come from its configuration (GetSchemaResponse.operations_from_config); the
// kernel asks again once Configure has started the server, which answers with the
// server's tools and, when it has resources, list_resources / read_resource.
//
// A local server that dies makes the bridge exit: the kernel then reports every call in
// flight as process_crashed and relaunches the bridge (and so the server) on the next call.
import type { JsonObject } from "@bufbuild/protobuf";
import { CallToolResultSchema, ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { type PluginContext, service } from "@pluggableharness/plugin-sdk";
import { ToolService } from "@pluggableharness/protocol/tool";
import {
  AsyncQueue,
  configSchema,
  configWarning,
  type Diagnostic,
  errorEvent,
  progress,
  readConfig,
  resultEvent,
  type ToolEventInit,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { cutChars, MAX_PROGRESS_CHARS } from "./budget.ts";
import { clipReportOf } from "./clip.ts";
import { CONFIG, parseSettings } from "./config.ts";
import { type Connection, connect } from "./connection.ts";
import { isResourceOperation, listResources, RESOURCE_OPERATIONS, readResource } from "./resources.ts";
import { failureOf, offered, resultPayload, type ToolSchemaInit, toolSchema } from "./tools.ts";

interface State {
  /** The configuration it was started with, and what Configure answered then. */
  key: string;
  diagnostics: Diagnostic[];
  connection: Connection;
  tools: Map<string, Tool>;
  schemas: ToolSchemaInit[];
  /** Checks of structured content, for tools that declare an outputSchema. */
  validators: Map<string, JsonSchemaValidator<unknown>>;
}

let state: State | undefined;

/** How a dead local server ends the bridge (replaceable in tests). */
export const lifecycle = {
  die(why: string): void {
    process.stderr.write(`mcp bridge: ${why}\n`);
    process.exit(70);
  },
};

const wrap = (event: ToolEventInit) => ({ event });

async function configure(values: JsonObject, ctx: PluginContext): Promise<Diagnostic[]> {
  const { settings, problems } = parseSettings(values);
  if (!settings) return problems;
  const key = JSON.stringify(values);
  // The same configuration again (the kernel configures a relaunched process, and may
  // configure twice at start-up): the running server stays.
  if (state && state.key === key) return state.diagnostics;
  const previous = state;
  state = undefined;
  if (previous) await previous.connection.close();
  let started: Awaited<ReturnType<typeof connect>>;
  try {
    started = await connect(settings, ctx.kernel);
  } catch (err) {
    // A server that cannot start leaves the session without its tools, not without a session.
    const message = (err as Error).message;
    ctx.log.warn("MCP server unavailable", { error: message });
    return [configWarning([], "The MCP server is unavailable; its tools are not offered", message)];
  }
  const { connection } = started;
  connection.onDeath = (why) => lifecycle.die(why);
  const tools = new Map<string, Tool>();
  const schemas: ToolSchemaInit[] = [];
  const validators = new Map<string, JsonSchemaValidator<unknown>>();
  const ajv = new AjvJsonSchemaValidator();
  for (const t of connection.tools) {
    if (!offered(t, settings) || tools.has(t.name)) continue;
    tools.set(t.name, t);
    // What a server says about its tools reaches every model request: masked like its output
    // (the name stays: it is how the server is called).
    const r = connection.redactor;
    schemas.push(
      toolSchema(
        {
          ...t,
          ...(t.title !== undefined ? { title: r.mask(t.title) } : {}),
          ...(t.description !== undefined ? { description: r.mask(t.description) } : {}),
          inputSchema: r.maskJson(t.inputSchema),
          ...(t.outputSchema ? { outputSchema: r.maskJson(t.outputSchema) } : {}),
          ...(t.annotations ? { annotations: r.maskJson(t.annotations) } : {}),
        },
        settings,
      ),
    );
    if (t.outputSchema) {
      try {
        validators.set(t.name, ajv.getValidator(t.outputSchema));
      } catch {
        // A schema Ajv cannot compile: the kernel still checks the payload against it.
      }
    }
  }
  const diagnostics: Diagnostic[] = [];
  if (started.notice) diagnostics.push(configWarning(["sandbox"], started.notice));
  if (started.toolsNotice) diagnostics.push(configWarning([], started.toolsNotice));
  if (connection.hasResources) {
    for (const op of RESOURCE_OPERATIONS) {
      if (tools.has(op.name ?? "")) {
        diagnostics.push(
          configWarning(
            [],
            `The server has its own tool "${op.name}": the bridge's resource operation of that name is left out`,
          ),
        );
        continue;
      }
      schemas.push(op);
    }
  }
  for (const name of [...(settings.enabledTools ?? []), ...settings.disabledTools]) {
    if (!connection.tools.some((t) => t.name === name)) {
      diagnostics.push(configWarning([], `The MCP server has no tool "${name}"`));
    }
  }
  state = { key, diagnostics, connection, tools, schemas, validators };
  return diagnostics;
}

/**
 * What the SDK's callTool checks, done here because the transport may have cut the result:
 * structured content that arrived whole must match the tool's outputSchema; cut content is
 * left out of the payload instead (resultPayload says so to the model).
 */
function checkStructured(s: State, tool: Tool, result: Record<string, unknown>): void {
  const validator = s.validators.get(tool.name);
  if (!validator || result["isError"] === true) return;
  if (!result["structuredContent"]) {
    throw new McpError(
      ErrorCode.InvalidRequest,
      `Tool ${tool.name} has an output schema but did not return structured content`,
    );
  }
  const clip = clipReportOf(result);
  const cut =
    clip?.cuts.some((c) => c.path[0] === "structuredContent") ||
    clip?.drops.some((d) => d.path[0] === "structuredContent");
  if (cut) return;
  const v = validator(result["structuredContent"]);
  if (!v.valid) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `Structured content does not match the tool's output schema: ${v.errorMessage}`,
    );
  }
}

/** `_meta` with the call's W3C trace context, or nothing when the kernel sent none. */
function traceMeta(ctx: PluginContext): { _meta?: Record<string, string> } {
  const carrier = ctx.traceContext;
  return carrier["traceparent"] ? { _meta: { ...carrier } } : {};
}

async function* invokeTool(
  s: State,
  tool: Tool,
  args: JsonObject,
  ctx: PluginContext,
): AsyncGenerator<ToolEventInit, JsonObject, void> {
  const queue = new AsyncQueue<ToolEventInit>();
  const settings = s.connection.settings;
  const redactor = s.connection.redactor;
  const call = s.connection.client
    .request(
      {
        method: "tools/call",
        // The kernel's trace context goes on to the server (`_meta`, as MCP tracing proposals
        // carry it), so a server that traces joins the same trace.
        params: { name: tool.name, arguments: args, ...traceMeta(ctx) },
      },
      CallToolResultSchema,
      {
        signal: ctx.signal,
        timeout: settings.toolTimeoutMs,
        onprogress: (p) => {
          const fraction =
            p.total && p.total > 0 ? Math.min(1, Math.max(0, p.progress / p.total)) : undefined;
          const message = p.message ?? (p.total ? `${p.progress}/${p.total}` : String(p.progress));
          queue.push(progress(cutChars(redactor.mask(message), MAX_PROGRESS_CHARS), fraction));
        },
      },
    )
    .finally(() => queue.close());
  call.catch(() => {}); // consumed below
  for await (const ev of queue.drain()) yield ev;
  try {
    const result = (await call) as Record<string, unknown>;
    checkStructured(s, tool, result);
    return resultPayload(result, {
      maxBytes: settings.maxOutputBytes,
      maskJson: (v) => redactor.maskJson(v),
    });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    throw failureOf(err, (t) => redactor.mask(t), settings.maxOutputBytes);
  }
}

export function bridgeService() {
  const fields = CONFIG;
  return service(ToolService, {
    getSchema() {
      return {
        tools: state ? state.schemas : [],
        configSchema: configSchema(fields),
        operationsFromConfig: true,
      };
    },

    async configure(req, ctx) {
      const { values, diagnostics } = readConfig(fields, req.config);
      if (diagnostics.length === 0) diagnostics.push(...(await configure(values, ctx)));
      return { result: { diagnostics } };
    },

    async *invoke(req, ctx) {
      const call = req.call;
      const s = state;
      try {
        if (!call) throw new ToolFailure("invalid_arguments", "no call");
        if (!s)
          throw new ToolFailure(
            "execution_failed",
            "the MCP server is not running (see the warning at start-up)",
          );
        const args = call.arguments ?? {};
        let out: AsyncGenerator<ToolEventInit, JsonObject, void> | Promise<JsonObject>;
        const tool = s.tools.get(call.toolName);
        if (tool) out = invokeTool(s, tool, args, ctx);
        else if (
          s.connection.hasResources &&
          isResourceOperation(call.toolName) &&
          !s.tools.has(call.toolName)
        ) {
          out =
            call.toolName === "list_resources"
              ? listResources(s.connection, args, ctx.signal)
              : readResource(s.connection, args, ctx.signal);
        } else {
          throw new ToolFailure(
            "invalid_arguments",
            `unknown operation ${JSON.stringify(call.toolName)}; this server offers ${[...s.schemas.map((x) => x.name)].join(", ")}`,
          );
        }
        let payload: JsonObject;
        if (Symbol.asyncIterator in out) {
          for (;;) {
            const step = await out.next();
            if (step.done) {
              payload = step.value;
              break;
            }
            yield wrap(step.value);
          }
        } else payload = await out;
        yield wrap(resultEvent(payload));
      } catch (err) {
        if (ctx.signal.aborted) {
          // The SDK has told the server (notifications/cancelled); the stream is gone, so
          // what happened travels through the kernel's Log callback.
          const fields = {
            call_id: call?.id ?? "",
            tool_name: call?.toolName ?? "",
            report: { note: "cancelled; notifications/cancelled sent to the MCP server" },
          };
          ctx.log.warn("tool call cancelled", fields);
          const sent = ctx.kernel.log("warn", "tool call cancelled", fields, {
            logger: call?.toolName ?? "mcp",
          });
          await Promise.race([sent.catch(() => {}), new Promise((r) => setTimeout(r, 1_500).unref())]);
          return;
        }
        const failure =
          err instanceof ToolFailure
            ? err
            : failureOf(
                err,
                (t) => s?.connection.redactor.mask(t) ?? t,
                s?.connection.settings.maxOutputBytes,
              );
        yield wrap(errorEvent(failure));
      }
    },
  });
}

/** Stops the server (plugin shutdown). */
export async function shutdown(): Promise<void> {
  const s = state;
  state = undefined;
  if (s) await s.connection.close();
}
