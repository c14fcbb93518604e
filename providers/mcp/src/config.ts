// The bridge's agent.hcl block: one block is one MCP server (docs/decisions/mcp.md).
import { resolve } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { SANDBOX_MODES, type SandboxMode } from "@pluggableharness/runtime/sandbox";
import { type ConfigField, configError, type Diagnostic, rootsField } from "@pluggableharness/tool-kit";
import { DEFAULT_MAX_OUTPUT_BYTES, MAX_MAX_OUTPUT_BYTES, MIN_MAX_OUTPUT_BYTES } from "./budget.ts";

export const CONFIG: readonly ConfigField[] = [
  {
    name: "command",
    type: "list_string",
    description:
      'A local server: the program and its arguments, e.g. ["npx", "-y", "@modelcontextprotocol/server-filesystem", "."]; spoken to over stdio.',
  },
  {
    name: "env",
    type: "map_string",
    description:
      'Variables set for a local server on top of the sandbox\'s environment. A secret must be written as env("NAME").',
  },
  {
    name: "cwd",
    type: "string",
    path: true,
    // The kernel resolves it against the directory of agent.hcl, so the bridge never depends
    // on its own working directory (a worker thread has the kernel's).
    default: ".",
    description: "Working directory of a local server (default: the directory of agent.hcl).",
  },
  {
    name: "url",
    type: "string",
    description: 'A remote server\'s endpoint (Streamable HTTP, or legacy SSE with transport = "sse").',
  },
  {
    name: "headers",
    type: "map_string",
    description:
      // biome-ignore lint/suspicious/noTemplateCurlyInString: HCL template syntax, not JavaScript's
      'HTTP headers for a remote server, e.g. Authorization = "Bearer ${env("TOKEN")}" (secrets only through env()).',
  },
  {
    name: "transport",
    type: "string",
    description:
      '"stdio" (with command), "http" (Streamable HTTP, with url) or "sse"; default from which is set.',
  },
  {
    name: "enabled_tools",
    type: "list_string",
    description: "If set, only these of the server's tools are offered.",
  },
  {
    name: "disabled_tools",
    type: "list_string",
    description: "Server tools never offered.",
  },
  {
    name: "trust_read_only_hint",
    type: "bool",
    default: false,
    description:
      "Take the server's readOnlyHint at its word: such tools become data sources that run without asking. Off by default: every tool is a high-risk resource that asks.",
  },
  {
    name: "startup_timeout_ms",
    type: "number",
    default: 20_000,
    description: "How long starting and initializing the server may take.",
  },
  {
    name: "tool_timeout_ms",
    type: "number",
    default: 120_000,
    description: "The deadline of one tool call (the kernel's default_timeout for the server's tools).",
  },
  {
    name: "max_output_bytes",
    type: "number",
    default: DEFAULT_MAX_OUTPUT_BYTES,
    description:
      "Most bytes of text one result, resource read or error passes on to the model (1 KiB to 1 MiB); the rest is cut with a note. Structured content larger than this is left out.",
  },
  {
    name: "sandbox",
    type: "string",
    default: "best_effort",
    description:
      'A local server runs in the same sandbox as bash: "required" (refuse to start it without), "best_effort" (unconfined with a warning where bubblewrap cannot run) or "off".',
  },
  {
    name: "network",
    type: "bool",
    default: false,
    description: "Whether a sandboxed local server may use the network (default: none, like bash).",
  },
  rootsField("Directories a sandboxed local server may write (default: the directory of agent.hcl)."),
  {
    name: "secret_env_patterns",
    type: "list_string",
    description: "More variable-name patterns withheld from a local server, on top of the kernel's.",
  },
];

export type TransportName = "stdio" | "http" | "sse";

export interface Settings {
  transport: TransportName;
  command: string[];
  env: Record<string, string>;
  /** Absolute: the server's working directory, and its writable root without roots. */
  cwd: string;
  url: URL | undefined;
  headers: Record<string, string>;
  enabledTools: string[] | undefined;
  disabledTools: string[];
  trustReadOnlyHint: boolean;
  startupTimeoutMs: number;
  toolTimeoutMs: number;
  maxOutputBytes: number;
  sandbox: SandboxMode;
  network: boolean;
  roots: string[];
  secretPatterns: string[];
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);
const map = (v: unknown): Record<string, string> =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? { ...(v as Record<string, string>) } : {};

/** Checks a decoded block; never quotes a value of env or headers (they may hold secrets). */
export function parseSettings(values: JsonObject): { settings?: Settings; problems: Diagnostic[] } {
  const problems: Diagnostic[] = [];
  const command = strings(values["command"]);
  const urlText = typeof values["url"] === "string" ? values["url"] : "";
  let transport = values["transport"] as string | undefined;
  if (command.length === 0 && urlText === "") {
    return {
      problems: [
        configError(["command"], "an MCP server block needs command (a local server) or url (a remote one)"),
      ],
    };
  }
  if (transport === undefined || transport === "") transport = command.length > 0 ? "stdio" : "http";
  if (!["stdio", "http", "sse"].includes(transport)) {
    problems.push(configError(["transport"], 'transport must be "stdio", "http" or "sse"'));
  }
  if (command.length > 0 && urlText !== "") {
    problems.push(
      configError(["url"], "set either command (a local server) or url (a remote one), not both"),
    );
  } else if (transport === "stdio" && command.length === 0) {
    problems.push(
      configError(["command"], "an MCP server block needs command (a local server) or url (a remote one)"),
    );
  } else if (transport !== "stdio" && urlText === "") {
    problems.push(configError(["url"], `transport "${transport}" needs url`));
  }
  let url: URL | undefined;
  if (urlText !== "") {
    try {
      url = new URL(urlText);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
      if (url.username || url.password) {
        problems.push(configError(["url"], "credentials in url are not allowed: use headers with env()"));
      }
    } catch {
      problems.push(configError(["url"], "url must be an http:// or https:// address"));
    }
  }
  for (const name of Object.keys(map(values["env"]))) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      problems.push(configError(["env"], `not a variable name: ${name}`));
  }
  const sandbox = (values["sandbox"] ?? "best_effort") as SandboxMode;
  if (!SANDBOX_MODES.includes(sandbox)) {
    problems.push(
      configError(["sandbox"], `sandbox must be one of ${SANDBOX_MODES.map((m) => `"${m}"`).join(", ")}`),
    );
  }
  const num = (name: string, min: number, max: number) => {
    const v = values[name] as number;
    if (!Number.isInteger(v) || v < min || v > max)
      problems.push(configError([name], `${name} must be an integer from ${min} to ${max}`));
    return v;
  };
  // Configure itself has a 30 s deadline in the kernel; starting the server must fit in it.
  const startupTimeoutMs = num("startup_timeout_ms", 100, 25_000);
  const toolTimeoutMs = num("tool_timeout_ms", 100, 3_600_000);
  const maxOutputBytes = num("max_output_bytes", MIN_MAX_OUTPUT_BYTES, MAX_MAX_OUTPUT_BYTES);
  const enabled = values["enabled_tools"];
  if (problems.length > 0) return { problems };
  return {
    problems,
    settings: {
      transport: transport as TransportName,
      command,
      env: map(values["env"]),
      cwd: resolve(typeof values["cwd"] === "string" && values["cwd"] !== "" ? values["cwd"] : "."),
      url,
      headers: map(values["headers"]),
      enabledTools: Array.isArray(enabled) && enabled.length > 0 ? strings(enabled) : undefined,
      disabledTools: strings(values["disabled_tools"]),
      trustReadOnlyHint: values["trust_read_only_hint"] === true,
      startupTimeoutMs,
      toolTimeoutMs,
      maxOutputBytes,
      sandbox,
      network: values["network"] === true,
      roots: strings(values["roots"]),
      secretPatterns: strings(values["secret_env_patterns"]),
    },
  };
}
