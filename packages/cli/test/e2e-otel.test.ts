// End-to-end: a real `agent run` exports its traces, metrics and logs over OTLP to a
// loopback receiver that decodes them with the OpenTelemetry project's own protobuf code
// (testing/otlp-receiver). One run covers the span tree, the GenAI attributes, the plan
// decision, the metrics against the session's cost ledger, the logs' trace context and
// the secret canary; a second shows `telemetry = false` opens no connection, and a replay
// of the first session exports nothing.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import {
  type OtlpReceiver,
  type ReceivedSpan,
  spanTree,
  startOtlpReceiver,
} from "@pluggableharness/otlp-receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

const CANARY = "sk-ant-otel-canary-7f3a9c";
/** A third-party tool plugin that exports its own span over OTLP (its own process). */
const TRACED_PLUGIN = fileURLToPath(new URL("./fixtures/traced-plugin/main.ts", import.meta.url));
/** A stdio MCP server that writes the `_meta` of each tools/call it gets to a file. */
const MCP_SERVER = fileURLToPath(new URL("./fixtures/mcp-meta-server.mjs", import.meta.url));

let sb: Sandbox;
let fake: FakeVendor;
let receiver: OtlpReceiver;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await fake?.close();
  await receiver?.close();
  sb?.cleanup();
});

function withSettings(repo: string, settings: string): void {
  const file = join(repo, "agent.hcl");
  writeFileSync(file, `${readFileSync(file, "utf8")}\nsettings {\n${settings}\n}\n`);
}

const observability = (endpoint: string, protocol: string) => `
  observability {
    endpoint           = "${endpoint}"
    protocol           = "${protocol}"
    sampling_ratio     = 1.0
    traces_enabled     = true
    metrics_enabled    = true
    logs_enabled       = true
    export_interval_ms = 60000
    service_name       = "otel-e2e"
    resource_attrs     = { env = "test" }
  }`;

/**
 * Adds, to the fixture project, the third-party `traced` plugin (through dev_overrides;
 * network for its own OTLP export), the first-party agent provider with an `explorer`
 * profile a sub-agent runs as, and an MCP server (the official SDK's) bridged by the mcp
 * provider, which records the `_meta` it is sent in mcp-meta.json.
 */
function withPlugins(repo: string, env: NodeJS.ProcessEnv, otlpHttp: string): void {
  const file = join(repo, "agent.hcl");
  const hcl = readFileSync(file, "utf8")
    .replace(
      "required_providers {\n",
      `required_providers {
  traced = {
    source  = "github.com/acme/provider-traced"
    version = ">= 0.1.0"
    network = true
  }
  agent = {
    source  = "pluggableharness/agent"
    version = ">= 0.1.0"
  }
  meta = {
    source  = "pluggableharness/mcp"
    version = ">= 0.1.0"
  }
`,
    )
    .replace(
      'tools     = ["filesystem.*", "exec.*"]',
      'tools     = ["filesystem.*", "exec.*", "traced.*", "agent.*", "meta.*"]',
    );
  writeFileSync(
    file,
    `${hcl}
provider "traced" {
  otlp_endpoint = "${otlpHttp}"
}

provider "agent" {
  profiles = { explorer = "answers briefly" }
}

provider "meta" {
  command = ${JSON.stringify([process.execPath, MCP_SERVER, join(repo, "mcp-meta.json")])}
}

policy "allow_mcp" {
  match  = { provider = "meta" }
  action = "allow"
}

policy "allow_spawns" {
  match  = { provider = "agent" }
  action = "allow"
}

agent_profile "explorer" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["filesystem.read_file"]
}
`,
  );
  const dir = join(env["XDG_CONFIG_HOME"]!, "agent");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "config.hcl"), `dev_overrides {\n  traced = "${TRACED_PLUGIN}"\n}\n`);
}

function child(spans: readonly ReceivedSpan[], parent: ReceivedSpan, name: string): ReceivedSpan {
  const found = spans.find((s) => s.parentSpanId === parent.spanId && s.name.startsWith(name));
  if (!found) throw new Error(`no child "${name}" under "${parent.name}" in\n${spanTree(spans)}`);
  return found;
}

describe("OpenTelemetry export", () => {
  let sessionId = "";
  let repo = "";

  it("exports a turn's span tree, GenAI attributes, metrics matching the cost ledger and correlated logs", async () => {
    repo = sb.repo("traced");
    withSettings(repo, observability(receiver.grpcEndpoint, "grpc"));
    withPlugins(repo, sb.env, receiver.httpEndpoint);
    fake.push(
      {
        kind: "tool_calls",
        text: "Reading, then writing.",
        calls: [
          { name: "filesystem__read_file", args: { path: "calc.js" } },
          { name: "filesystem__write_file", args: { path: "notes.txt", content: "hello" } },
          { name: "traced__lookup", args: { key: "calc" } },
          { name: "meta__echo", args: { message: "hello mcp" } },
          {
            name: "agent__spawn_subagent",
            args: { profile: "explorer", prompt: "Say hi.", description: "greet" },
          },
        ],
        usage: { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 300 },
      },
      // The sub-agent's one model call, while the parent waits on its spawn call.
      { kind: "text", text: "Hi.", usage: { inputTokens: 400, outputTokens: 5 } },
      { kind: "text", text: "Done.", usage: { inputTokens: 1500, outputTokens: 20 } },
    );
    const r = await agent(["run", "-p", "Read calc.js and write notes.txt", "--output-format", "json"], {
      cwd: repo,
      env: {
        ...sb.env,
        ANTHROPIC_API_KEY: CANARY,
        FAKE_ANTHROPIC_URL: fake.url,
        FIXTURE_ROOT: repo,
        // Debug records reach the logs signal (a headless run's own sink shows warnings up).
        AGENT_LOG_LEVEL: "debug",
      },
    });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    sessionId = (JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { session_id: string }).session_id;

    const spans = receiver.spans;
    expect(receiver.requests.some((q) => q === "grpc traces")).toBe(true);
    // One root span: the session's (its sub-agent's session nests further down).
    const roots = spans.filter((s) => s.parentSpanId === "");
    expect(
      roots.map((s) => s.name),
      spanTree(spans),
    ).toEqual(["session"]);
    const session = roots[0];
    expect(session!.attributes["session.id"]).toBe(sessionId);
    expect(session!.resource["service.name"]).toBe("otel-e2e");
    expect(session!.resource["env"]).toBe("test");
    // Every span of the run is in the session's one trace.
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);

    const turns = spans.filter((s) => s.name === "turn" && s.parentSpanId === session!.spanId);
    expect(turns).toHaveLength(2);
    const first = turns.sort((a, b) => (a.startNs < b.startNs ? -1 : 1))[0]!;
    // turn -> model call (steps 3-4) -> one chat span per attempt, with GenAI attributes.
    const modelStep = child(spans, first, "step 3-4 model-call");
    const chat = child(spans, modelStep, "chat claude-sonnet-5");
    expect(chat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.system": "anthropic",
      "gen_ai.request.model": "claude-sonnet-5",
      "gen_ai.response.model": "claude-sonnet-5",
      "gen_ai.usage.input_tokens": 1200,
      "gen_ai.usage.output_tokens": 80,
      "gen_ai.usage.cache_read_input_tokens": 300,
      "gen_ai.response.finish_reasons": "tool_use",
    });
    // Prompt and completion text only on opt-in.
    expect(chat.attributes["gen_ai.completion"]).toBeUndefined();
    // turn -> step 9 (data sources) -> the read; turn -> step 11 -> plan decision; step 12 -> the write.
    const read = child(
      spans,
      child(spans, first, "step 9 data-sources"),
      "execute_tool filesystem.read_file",
    );
    expect(read.attributes["tool.outcome"]).toBe("success");
    const decision = child(
      spans,
      child(spans, first, "step 11 plan-ready"),
      "plan.decision filesystem.write_file",
    );
    expect(decision.attributes["plan.decision"]).toBe("allow");
    expect(decision.attributes["plan.decided_by"]).toMatch(/allow_file_edits/);
    const write = child(spans, child(spans, first, "step 12 apply"), "execute_tool filesystem.write_file");
    expect(write.attributes["gen_ai.tool.call.id"]).toBe(decision.attributes["gen_ai.tool.call.id"]);
    // The third-party plugin joined the trace: it received the execute_tool span's context
    // (gRPC metadata) and its own span, exported by its own OTLP exporter, is that span's child.
    const lookup = child(spans, child(spans, first, "step 9 data-sources"), "execute_tool traced.lookup");
    const own = child(spans, lookup, "traced-plugin.lookup");
    expect(own.resource["service.name"]).toBe("traced-plugin");
    expect(own.traceId).toBe(session!.traceId);
    expect(receiver.requests).toContain("http /v1/traces");
    // An MCP server's tool: the MCP client span (`tools/call <tool>`) inside its execute_tool,
    // and the server got that span's context in the request's `_meta`.
    const echo = child(spans, child(spans, first, "step 12 apply"), "execute_tool meta.echo");
    expect(echo.attributes["mcp.server.name"]).toBe("meta");
    const mcpCall = child(spans, echo, "tools/call echo");
    expect(mcpCall.attributes).toMatchObject({ "mcp.method.name": "tools/call", "mcp.server.name": "meta" });
    const meta = JSON.parse(readFileSync(join(repo, "mcp-meta.json"), "utf8")) as { traceparent?: string };
    expect(meta.traceparent).toBe(`00-${session!.traceId}-${mcpCall.spanId}-01`);
    // Hook points dispatch as spans (pre-tool-call, with no subscribers here, still one span).
    child(spans, child(spans, first, "step 7 pre-tool-call"), "hook pre-tool-call");
    expect(
      spans.filter((s) => s.name === "hook session-start" && s.parentSpanId === session!.spanId),
    ).toHaveLength(1);

    // A sub-agent's session span is a child of the tool call that spawned it (RunSession
    // carries the trace context), and its own turn and model call nest under it.
    const spawn = child(spans, child(spans, first, "step 12 apply"), "execute_tool agent.spawn_subagent");
    const sub = child(spans, spawn, "session");
    expect(sub.attributes).toMatchObject({ "agent.role": "subagent", "session.parent_id": sessionId });
    child(spans, child(spans, child(spans, sub, "turn"), "step 3-4 model-call"), "chat claude-sonnet-5");

    // Metrics agree with the sessions' own cost ledgers (the parent's and its sub-agent's), to the cent.
    const ledger = { cost: 0, input: 0, output: 0 };
    const dir = join(sb.home, "state", "agent", "sessions");
    for (const f of readdirSync(dir, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".sqlite"))) {
      const db = new DatabaseSync(join(dir, f), { readOnly: true });
      const row = db
        .prepare(
          "SELECT sum(cost_usd) AS cost, sum(input_tokens) AS input, sum(output_tokens) AS output FROM cost_ledger",
        )
        .get() as { cost: number; input: number; output: number };
      db.close();
      ledger.cost += row.cost ?? 0;
      ledger.input += row.input ?? 0;
      ledger.output += row.output ?? 0;
    }
    const sum = (metric: string, match: Record<string, unknown> = {}) =>
      receiver.points
        .filter((p) => p.metric === metric && Object.entries(match).every(([k, v]) => p.attributes[k] === v))
        .reduce((a, p) => a + p.value, 0);
    expect(ledger.cost).toBeGreaterThan(0);
    expect(Math.round(sum("agent.cost.usage") * 100)).toBe(Math.round(ledger.cost * 100));
    expect(sum("agent.cost.usage")).toBeCloseTo(ledger.cost, 9);
    expect(sum("agent.token.usage", { "token.type": "input" })).toBe(ledger.input);
    expect(sum("agent.token.usage", { "token.type": "output" })).toBe(ledger.output);
    expect(sum("agent.token.usage", { "token.type": "cache_read" })).toBe(300);
    expect(
      sum("agent.tool.calls", { "gen_ai.tool.name": "filesystem.write_file", "tool.outcome": "success" }),
    ).toBe(1);
    // The write (allow_file_edits), the MCP call (allow_mcp) and the spawn (allow_spawns);
    // tool calls split by MCP server.
    expect(sum("agent.approvals", { "plan.decision": "allow" })).toBe(3);
    expect(sum("agent.tool.calls", { "mcp.server.name": "meta", "tool.outcome": "success" })).toBe(1);
    expect(sum("agent.session.count", { "agent.role": "root" })).toBe(1);
    expect(sum("agent.session.count", { "agent.role": "subagent" })).toBe(1);
    const latency = receiver.points.filter((p) => p.metric === "agent.model.latency");
    expect(latency.reduce((a, p) => a + (p.count ?? 0), 0)).toBe(3);

    // Logs carry the trace context of the span they were written in.
    expect(receiver.logs.length).toBeGreaterThan(0);
    expect(receiver.logs.some((l) => l.traceId === session!.traceId && l.spanId !== "")).toBe(true);

    // The API key canary is in no exported attribute, resource or log record.
    const exported = JSON.stringify([spans, receiver.points, receiver.logs], (_k, v) =>
      typeof v === "bigint" ? String(v) : v,
    );
    expect(exported).not.toContain(CANARY);
  });

  it("opens no connection with telemetry = false, and a replay exports nothing", async () => {
    const off = sb.repo("untraced");
    withSettings(off, `  telemetry = false\n${observability(receiver.httpEndpoint, "http")}`);
    fake.push({ kind: "text", text: "Quiet." });
    const before = receiver.connections();
    const requests = receiver.requests.length;
    const r = await agent(["run", "-p", "Say something"], {
      cwd: off,
      env: { ...sb.env, ANTHROPIC_API_KEY: CANARY, FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: off },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(receiver.connections()).toBe(before);

    // Replaying the traced session (whose agent.hcl exports over gRPC) sends no request.
    const replay = await agent(["sessions", "replay", sessionId], {
      cwd: repo,
      env: { ...sb.env, ANTHROPIC_API_KEY: CANARY, FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo },
    });
    expect(replay.code).toBe(0);
    expect(receiver.requests.length).toBe(requests);
  });
});
