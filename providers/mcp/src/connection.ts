// One connection to the configured MCP server: started at Configure (a local server in the
// same sandbox and with the same environment policy as bash), initialized, its tools and
// resources listed; calls and reads go through it. The SDK's Client does the protocol.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { KernelClient } from "@pluggableharness/plugin-sdk";
import { probeSandbox, wrap } from "@pluggableharness/runtime/sandbox";
import { clipLimits } from "./budget.ts";
import type { Settings } from "./config.ts";
import { ownEnvironmentFallback } from "./environment.ts";
import { clippingFetch } from "./http.ts";
import { Redactor, secretName } from "./redact.ts";
import { ProcessTransport } from "./stdio.ts";
import { explainStartFailure } from "./why.ts";

const PKG_VERSION = "0.1.0";

export interface ServerInfo {
  name: string;
  version: string;
  instructions?: string;
}

export class StartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartError";
  }
}

export interface Started {
  connection: Connection;
  /** Said once when the server runs without the sandbox it was meant to have. */
  notice?: string;
  /** Said once when the server listed more tools than the bridge keeps. */
  toolsNotice?: string;
}

/**
 * Most of a server's tool list the bridge keeps: a server paging `tools/list` forever, or
 * with huge schemas, must not fill the bridge's memory while it starts (each page alone is
 * bounded by the clip limits, not their sum). Far more than any real server offers.
 */
export const MAX_TOOLS = 1000;
export const MAX_TOOL_LIST_BYTES = 8 * 1024 * 1024;

export class Connection {
  readonly client: Client;
  readonly transport: Transport;
  readonly settings: Settings;
  readonly redactor: Redactor;
  tools: Tool[] = [];
  hasResources = false;
  server: ServerInfo = { name: "", version: "" };
  /** Called when a local server's process goes away without being asked to. */
  onDeath?: (why: string) => void;

  constructor(client: Client, transport: Transport, settings: Settings, redactor: Redactor) {
    this.client = client;
    this.transport = transport;
    this.settings = settings;
    this.redactor = redactor;
  }

  get local(): boolean {
    return this.transport instanceof ProcessTransport;
  }

  /** Why the server went away, with the tail of what it wrote to stderr (secrets masked). */
  describeExit(): string {
    const t = this.transport;
    if (!(t instanceof ProcessTransport)) return "the connection to the server closed";
    const how = t.exit
      ? t.exit.signal
        ? `was killed by ${t.exit.signal}`
        : `exited with status ${t.exit.code}`
      : "closed its output";
    const tail = t.stderrTail.trim().split("\n").slice(-5).join("\n");
    return this.redactor.mask(`the MCP server ${how}${tail ? `; its last stderr lines:\n${tail}` : ""}`);
  }

  async close(): Promise<void> {
    if (this.transport instanceof ProcessTransport) this.transport.closing = true;
    await this.client.close().catch(() => {});
  }
}

/** The local server's program line, wrapped in the sandbox when it should and can be. */
function localCommand(
  settings: Settings,
  protectedPaths: readonly string[],
): { file: string; args: string[]; notice?: string } {
  const [file, ...args] = settings.command;
  const cwd = settings.cwd;
  if (settings.sandbox === "off") return { file: file!, args };
  const probe = probeSandbox();
  if (!probe.ok) {
    if (settings.sandbox === "required") {
      throw new StartError(
        `this MCP server must run in the sandbox (sandbox = "required"), and it cannot run here: ${probe.reason}`,
      );
    }
    return {
      file: file!,
      args,
      notice: `the sandbox is unavailable (${probe.reason}); the MCP server runs unconfined. Set sandbox = "required" in its block to refuse that, or "off" to silence this`,
    };
  }
  const w = wrap(
    {
      bwrap: probe.bwrap,
      writable: settings.roots.length > 0 ? settings.roots : [cwd],
      protectedPaths,
      network: settings.network,
      cwd,
      // A long-lived process: no placeholder mount points are left on the host.
      noPlaceholders: true,
    },
    settings.command,
  );
  return { file: w.file, args: w.args };
}

async function environment(
  kernel: KernelClient,
  settings: Settings,
): Promise<{ variables: Record<string, string>; protectedPaths: string[] }> {
  try {
    const k = await kernel.service();
    const r = await k.execEnvironment({ secretPatterns: settings.secretPatterns }, { timeoutMs: 5_000 });
    return { variables: { ...r.variables }, protectedPaths: [...r.protectedPaths] };
  } catch {
    return { variables: ownEnvironmentFallback(), protectedPaths: [] };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        onTimeout();
        reject(new StartError(`${what} did not finish within ${ms} ms (startup_timeout_ms)`));
      }, ms);
    }),
  ]);
}

/** Starts (or dials) the server, initializes it and lists what it offers. */
export async function connect(settings: Settings, kernel: KernelClient): Promise<Started> {
  const redactor = new Redactor([
    ...Object.entries(settings.env)
      .filter(([name]) => secretName(name, settings.secretPatterns))
      .map(([, v]) => v),
    ...Object.values(settings.headers),
  ]);
  const limits = clipLimits(settings.maxOutputBytes);
  let transport: Transport;
  let notice: string | undefined;
  let toolsNotice: string | undefined;
  if (settings.transport === "stdio") {
    const env = await environment(kernel, settings);
    const line = localCommand(settings, env.protectedPaths);
    notice = line.notice;
    transport = new ProcessTransport({
      file: line.file,
      args: line.args,
      cwd: settings.cwd,
      env: { ...env.variables, ...settings.env },
      clip: limits,
    });
  } else {
    const headers = settings.headers;
    // Every response body is read through the clipper (http.ts), as stdio lines are.
    const clipped = clippingFetch(limits);
    transport =
      settings.transport === "sse"
        ? new SSEClientTransport(settings.url!, {
            requestInit: { headers },
            fetch: clipped,
            eventSourceInit: {
              fetch: (url, init) =>
                clipped(url, {
                  ...init,
                  headers: { ...(init?.headers as Record<string, string>), ...headers },
                }),
            },
          })
        : new StreamableHTTPClientTransport(settings.url!, { requestInit: { headers }, fetch: clipped });
  }
  const client = new Client({ name: "pluggableharness", version: PKG_VERSION }, { capabilities: {} });
  const connection = new Connection(client, transport, settings, redactor);
  const what =
    settings.transport === "stdio"
      ? `starting the MCP server (${settings.command[0]})`
      : `connecting to the MCP server at ${settings.url!.origin}`;
  try {
    await withTimeout(
      (async () => {
        await client.connect(transport, { timeout: settings.startupTimeoutMs });
        const caps = client.getServerCapabilities() ?? {};
        const v = client.getServerVersion();
        connection.server = {
          name: v?.name ?? "",
          version: v?.version ?? "",
          ...(client.getInstructions() ? { instructions: client.getInstructions()! } : {}),
        };
        if (caps.tools) {
          let cursor: string | undefined;
          let bytes = 0;
          do {
            const page = await client.listTools(cursor ? { cursor } : {}, {
              timeout: settings.startupTimeoutMs,
            });
            for (const tool of page.tools) {
              bytes += JSON.stringify(tool).length;
              if (connection.tools.length >= MAX_TOOLS || bytes > MAX_TOOL_LIST_BYTES) {
                cursor = undefined;
                toolsNotice = `The MCP server lists more tools than the bridge reads (${MAX_TOOLS} tools or ${MAX_TOOL_LIST_BYTES / (1024 * 1024)} MiB of tool specifications); the rest are left out`;
                break;
              }
              connection.tools.push(tool);
            }
            if (!toolsNotice) cursor = page.nextCursor;
          } while (cursor);
        }
        connection.hasResources = caps.resources !== undefined;
      })(),
      settings.startupTimeoutMs,
      what,
      () => void connection.close(),
    );
  } catch (err) {
    await connection.close();
    if (err instanceof StartError) throw new StartError(redactor.mask(err.message));
    // The pipe may close a moment before the exit (and the last stderr) is seen.
    for (let i = 0; i < 10 && transport instanceof ProcessTransport && !transport.exit; i++)
      await new Promise((r) => setTimeout(r, 30));
    const died = transport instanceof ProcessTransport && transport.exit ? transport : undefined;
    const plain = died && explainStartFailure(died.stderrTail, settings.sandbox !== "off");
    if (plain) {
      const how = died.exit?.signal ? `killed by ${died.exit.signal}` : `exit status ${died.exit?.code}`;
      throw new StartError(redactor.mask(`${what} failed (${how}): ${plain}`));
    }
    const exit = died ? `; ${connection.describeExit()}` : "";
    // fetch says only "fetch failed"; its cause says why (ECONNREFUSED: nothing listens there).
    const because = causeCode(err);
    throw new StartError(redactor.mask(`${what} failed: ${(err as Error).message}${because}${exit}`));
  }
  transport.onclose = chain(transport.onclose, () => {
    if (transport instanceof ProcessTransport && !transport.closing)
      connection.onDeath?.(connection.describeExit());
  });
  return { connection, ...(notice ? { notice } : {}), ...(toolsNotice ? { toolsNotice } : {}) };
}

/**
 * Why, along an error's causes: the first system error code (ECONNREFUSED, ENOTFOUND, ...),
 * else the innermost cause's message, as " (…)"; fetch itself says only "fetch failed".
 */
function causeCode(err: unknown): string {
  let inner = "";
  let e = (err as { cause?: unknown } | undefined)?.cause;
  for (let depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return ` (${code})`;
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && message) inner = message;
    e = (e as { cause?: unknown }).cause;
  }
  return inner ? ` (${inner})` : "";
}

function chain(a: (() => void) | undefined, b: () => void): () => void {
  return () => {
    a?.();
    b();
  };
}
