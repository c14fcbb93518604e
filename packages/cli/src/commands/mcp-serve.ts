// `agent mcp serve`: the project's tools (the profile's) as an MCP server over stdio, so
// other MCP clients can use them. A call runs like a model's would, without a model turn:
// pre-tool-call hooks, policy, the plan/apply gate and post hooks, recorded in a session
// file. Nobody can answer a permission prompt over MCP, so an ask resolves as --ask says
// (deny by default). stdout carries only the protocol; logs go to stderr.

import type { JsonObject } from "@bufbuild/protobuf";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { ConfigError, loadProjectConfig } from "@pluggableharness/config";
import {
  createKernel,
  type DirectInvokeOutcome,
  type Kernel,
  type KernelLogRecord,
  LOG_LEVEL_ORDER,
  type SessionHandle,
  type SessionToolDefinition,
} from "@pluggableharness/kernel";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";
import { configFailure, formatLog, inProcessFrontends, logLevel } from "./kernel-start.ts";

const pkg = { name: "pluggableharness", version: "0.1.0" };

export interface ServeOptions {
  dir?: string;
  profile?: string;
  ask?: "deny" | "allow";
  /** For tests: the protocol streams (default: the process's stdin and stdout). */
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/** A session tool as an MCP tool: its kind and risk become the annotations MCP clients know. */
export function mcpTool(t: SessionToolDefinition): Tool {
  const input = { type: "object", properties: {}, ...t.inputSchema } as Tool["inputSchema"];
  return {
    name: t.name,
    description: t.description,
    inputSchema: input,
    annotations: {
      title: `${t.provider}.${t.tool}`,
      readOnlyHint: t.kind !== "resource",
      destructiveHint: t.kind === "resource" && (t.risk === "high" || t.risk === "critical"),
    },
  };
}

export async function runMcpServe(io: Io, opts: ServeOptions): Promise<number> {
  const dir = projectOf(io, opts.dir).dir;
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const config = loaded.config;
  const level = logLevel(io.env, "warn");
  let kernel: Kernel;
  try {
    kernel = await createKernel({
      projectDir: dir,
      installationRoot: installationRoot(),
      env: io.env,
      config,
      headlessAsk: opts.ask ?? "deny",
      exclude: inProcessFrontends(config),
      logSink: (r: KernelLogRecord) => {
        if (LOG_LEVEL_ORDER[r.level] >= LOG_LEVEL_ORDER[level]) line(io.err, formatLog(r));
      },
      logLevel: level,
    });
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err.diagnostics);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }
  let handle: SessionHandle;
  try {
    handle = await kernel.startSession({ profile: opts.profile ?? "default", workingDirectory: dir });
  } catch (err) {
    await kernel.shutdown().catch(() => {});
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }

  const server = new Server(pkg, {
    capabilities: { tools: {} },
    instructions:
      "Tools of a PluggableHarness project. Each call goes through the project's policy; a call the policy would ask about is " +
      `${opts.ask === "allow" ? "allowed" : "denied"} (agent mcp serve --ask).`,
  });
  const tools = () => handle.toolDefinitions();
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools().map(mcpTool) }));

  // Calls run one at a time through the session; a cancelled one interrupts the session's
  // run only while it is the one running (the oldest unanswered).
  const pending: symbol[] = [];
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const name = req.params.name;
    if (!tools().some((t) => t.name === name)) {
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}`);
    }
    const client = server.getClientVersion()?.name ?? "an MCP client";
    const me = Symbol(name);
    pending.push(me);
    const onAbort = () => {
      if (pending[0] === me) handle.interrupt();
    };
    extra.signal.addEventListener("abort", onAbort, { once: true });
    let outcome: DirectInvokeOutcome;
    try {
      outcome = await handle.invoke(name, (req.params.arguments ?? {}) as JsonObject, {
        kind: "mcp_client",
        client,
      });
    } catch (err) {
      throw new McpError(ErrorCode.InvalidParams, (err as Error).message);
    } finally {
      extra.signal.removeEventListener("abort", onAbort);
      pending.splice(pending.indexOf(me), 1);
    }
    return {
      content: [{ type: "text", text: outcome.content }],
      isError: outcome.isError,
      ...(outcome.payload ? { structuredContent: outcome.payload } : {}),
    };
  });

  const transport = new StdioServerTransport(
    (opts.stdin ?? process.stdin) as never,
    (opts.stdout ?? process.stdout) as never,
  );
  const closed = new Promise<void>((r) => {
    transport.onclose = () => r();
    (opts.stdin ?? process.stdin).once("end", () => r());
  });
  await server.connect(transport);
  line(
    io.err,
    `agent mcp serve: ${tools().length} tools of profile "${handle.profile}", session ${handle.id}`,
  );
  await closed;
  await server.close().catch(() => {});
  await kernel.shutdown().catch(() => {});
  return EXIT.OK;
}
