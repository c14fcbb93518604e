// Shared harness for the agent-loop tests: one plugin pool per test file (so plugin
// processes start once), a fresh project/state directory and kernel per test, a fake
// clock whose sleeps return at once but are recorded, and a frontend client that
// collects ServerEvents and waits for the one a test needs.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import {
  ApplyEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { openSessionReader, type StoredEvent } from "@pluggableharness/state";
import {
  type ClientEventInit,
  createKernel,
  type FrontendConnection,
  type InProcessPluginFactory,
  type Kernel,
  type KernelClock,
  type KernelLogRecord,
  type LoopLimits,
  PluginPool,
  type PluginPoolOptions,
  type TraceEvent,
  type VendorThrottle,
} from "../../src/index.ts";
import { createPlugin as contextPlugin } from "./fixtures/context-plugin.ts";
import { createPlugin as hooksPlugin } from "./fixtures/hooks-plugin.ts";
import { createPlugin as memoryPlugin } from "./fixtures/memory-plugin.ts";
import { createPlugin as modelPlugin } from "./fixtures/scripted-model-plugin.ts";
import { createPlugin as toolsPlugin } from "./fixtures/tools-plugin.ts";

export const FIXTURES = {
  model: fileURLToPath(new URL("./fixtures/scripted-model.ts", import.meta.url)),
  tools: fileURLToPath(new URL("./fixtures/tools.ts", import.meta.url)),
  "tools-plain": fileURLToPath(new URL("./fixtures/tools-plain.ts", import.meta.url)),
  hooks: fileURLToPath(new URL("./fixtures/hooks.ts", import.meta.url)),
  context: fileURLToPath(new URL("./fixtures/context.ts", import.meta.url)),
  memory: fileURLToPath(new URL("./fixtures/memory.ts", import.meta.url)),
  liar: fileURLToPath(new URL("../plugins/fixtures/sandboxed/liar.ts", import.meta.url)),
  writer: fileURLToPath(new URL("../plugins/fixtures/sandboxed/writer.ts", import.meta.url)),
  prober: fileURLToPath(new URL("../plugins/fixtures/sandboxed/prober.ts", import.meta.url)),
};

export type FixtureName = keyof typeof FIXTURES;

/** The fixtures that also run on the in-process transport (the same services, called directly). */
const IN_PROCESS: Partial<Record<FixtureName, InProcessPluginFactory>> = {
  model: (host) => modelPlugin(host) as ReturnType<InProcessPluginFactory>,
  tools: (host) => toolsPlugin(host) as ReturnType<InProcessPluginFactory>,
  "tools-plain": (host) => toolsPlugin(host, { slashCommands: false }) as ReturnType<InProcessPluginFactory>,
  hooks: (host) => hooksPlugin(host) as ReturnType<InProcessPluginFactory>,
  context: (host) => contextPlugin(host) as ReturnType<InProcessPluginFactory>,
  memory: () => memoryPlugin() as ReturnType<InProcessPluginFactory>,
};

/** JSON read back from fixture logs and recorded requests (shape checked by the assertions). */
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON from files the fixtures wrote
export type Loose = any;

export const TERMINAL = new Set<SessionStatus>([
  SessionStatus.COMPLETED,
  SessionStatus.CANCELLED,
  SessionStatus.FAILED,
  SessionStatus.ERROR_MAX_TURNS,
  SessionStatus.ERROR_MAX_BUDGET_USD,
  SessionStatus.ERROR_MAX_WALL_CLOCK,
]);

// ---- script helpers --------------------------------------------------------------------

export type Ev = Record<string, unknown>;
export const text = (t: string): Ev => ({ text: t });
export const tool = (id: string, name: string, input: Record<string, unknown>): Ev => ({
  tool: { id, name, input },
});
export const usage = (input: number, output: number): Ev => ({ usage: { input, output } });
export const stop = (reason = "end_turn"): Ev => ({ stop: reason });
export const reply = (t: string, u: [number, number] = [10, 5]): { events: Ev[] } => ({
  events: [text(t), usage(u[0], u[1]), stop()],
});
export const calls = (...tools: Ev[]): { events: Ev[] } => ({
  events: [...tools, usage(20, 10), stop("tool_use")],
});
export const modelError = (category: string, extra: Record<string, unknown> = {}): { events: Ev[] } => ({
  events: [{ error: { category, ...extra } }],
});

// ---- the test kernel ----------------------------------------------------------------------

export interface Provider {
  /** Local name in agent.hcl. */
  readonly name: string;
  /** A dev override to this fixture; or, with `firstParty`, a package installed under that name. */
  readonly fixture: FixtureName | "installed";
  /** Resolve as this first-party provider (`pluggableharness/<firstParty>`) from KernelSpec.install. */
  readonly firstParty?: string;
  /** Its required_providers `isolation` (first-party only). */
  readonly isolation?: "process" | "worker";
  /** Provider block attributes (HCL source lines). */
  readonly attrs?: Record<string, string>;
  /** Run these services in process instead of the fixture's (a plugin a test writes inline). */
  readonly factory?: InProcessPluginFactory;
}

export interface KernelSpec {
  /** Providers besides the defaults (model, tools). */
  readonly providers?: readonly Provider[];
  /** Replace the default providers entirely. */
  readonly only?: readonly Provider[];
  /** Extra HCL (profiles, policies, hooks, settings). A default profile is added unless given. */
  readonly hcl?: string;
  readonly scripts?: Record<string, unknown>;
  /** Extra variables of the kernel's environment (e.g. a secret for the canary tests). */
  readonly env?: Readonly<Record<string, string>>;
  readonly headlessAsk?: "deny" | "allow";
  readonly limits?: Partial<LoopLimits>;
  /** Run on a previous (closed) kernel's directories and agent.hcl. */
  readonly reuse?: TestKernel;
  /** First-party name -> package directory, installed as `<root>/providers/<name>`. */
  readonly install?: Record<string, string>;
  /** Sessions directory (default: `<root>/state`). */
  readonly stateDir?: string;
  /**
   * How the fixture providers run: "in-process" (default) calls their services directly
   * through the kernel's in-process transport; "process" launches each as a go-plugin
   * subprocess (what crash-by-signal, the broker socket and sandbox tests need). Fixtures
   * without an in-process form (liar, writer, prober) are always processes.
   */
  readonly transport?: "in-process" | "process";
  /**
   * Run tool plugins in the bubblewrap sandbox. Off by default here: the fixture plugins
   * record what they do in log files outside the project (plugins/sandbox.test.ts tests it).
   */
  readonly sandbox?: boolean;
  /** KernelOptions.tolerateProviderFailures. */
  readonly tolerateProviderFailures?: boolean;
  /** Shared pacing of model calls (fleet mode's port). */
  readonly vendorThrottle?: VendorThrottle;
  /** KernelOptions.telemetryResource. */
  readonly telemetryResource?: Readonly<Record<string, string>>;
  /** Session file durability (default "normal": no sync to disk per commit). */
  readonly durability?: "full" | "normal";
}

export class FakeClock implements KernelClock {
  t = Date.UTC(2026, 0, 1);
  readonly sleeps: number[] = [];
  now(): number {
    return this.t;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.t += ms;
  }
  random(): number {
    return 0.5;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface TestKernel {
  readonly kernel: Kernel;
  readonly root: string;
  readonly projectDir: string;
  readonly stateDir: string;
  readonly scriptDir: string;
  readonly logDir: string;
  readonly clock: FakeClock;
  readonly logs: KernelLogRecord[];
  readonly traces: TraceEvent[];
  script(name: string, script: unknown): void;
  requests(scenario: string): Array<{ model: string; turn: number; attempt: number; request: Loose }>;
  invocations(): Array<Record<string, Loose>>;
  hookLog(file?: string): Array<Record<string, Loose>>;
  client(options?: { interactive?: boolean }): TestClient;
  /** Persisted events of a session, decoded where the test needs it. */
  file(sessionId: string): SessionFile;
  /** The vendor's (scripted) id of one of a session's kernel call ids (read from its file). */
  vendorId(sessionId: string, callId: string): string;
  /** The kernel's id of the call a session's script named `vendorId`. */
  callId(sessionId: string, vendorId: string): string;
  close(): Promise<void>;
}

export class Harness {
  readonly pool: PluginPool;
  readonly #dirs: string[] = [];
  readonly #kernels: TestKernel[] = [];

  readonly #instances = new Map<
    string,
    { plugin: ReturnType<InProcessPluginFactory>; exit?: (code: number) => void }
  >();

  /**
   * One in-process instance per provider name for the whole file, as the pool keeps one
   * process: kernels of one test (a resume) see the same plugin state. An instance that
   * exited is replaced, like a relaunched process; its exit reaches the latest kernel.
   */
  #shared(name: string, fixture: FixtureName): InProcessPluginFactory {
    return (host) => {
      const key = `${name}\u0000${fixture}`;
      let entry = this.#instances.get(key);
      if (!entry) {
        const e: { plugin: ReturnType<InProcessPluginFactory>; exit?: (code: number) => void } = {
          plugin: undefined as never,
        };
        e.plugin = IN_PROCESS[fixture]!({
          exit: (code) => {
            this.#instances.delete(key);
            return e.exit!(code);
          },
        });
        entry = e;
        this.#instances.set(key, entry);
      }
      entry.exit = host.exit;
      return entry.plugin;
    };
  }

  constructor(poolOptions: PluginPoolOptions = {}) {
    this.pool = new PluginPool({
      ...poolOptions,
      hostOptions: { shutdownGraceMs: 500, ...poolOptions.hostOptions },
    });
  }

  async kernel(spec: KernelSpec = {}): Promise<TestKernel> {
    const root = spec.reuse?.root ?? mkdtempSync(join(tmpdir(), "ph-loop-"));
    if (!spec.reuse) this.#dirs.push(root);
    const projectDir = join(root, "project");
    const stateDir = spec.stateDir ?? join(root, "state");
    const scriptDir = join(root, "scripts");
    const logDir = join(root, "logs");
    for (const d of [projectDir, stateDir, scriptDir, logDir]) mkdirSync(d, { recursive: true });
    if (!spec.reuse) {
      for (const [name, dir] of Object.entries(spec.install ?? {})) {
        mkdirSync(join(root, "providers"), { recursive: true });
        symlinkSync(dir, join(root, "providers", name));
      }
    }
    const providers: Provider[] = spec.only
      ? [...spec.only]
      : [
          { name: "model", fixture: "model", attrs: { script_dir: JSON.stringify(scriptDir) } },
          { name: "tools", fixture: "tools", attrs: { log_dir: JSON.stringify(logDir) } },
          ...(spec.providers ?? []),
        ];
    const devOverrides: Record<string, string> = {};
    const inProcessProviders: Record<string, InProcessPluginFactory> = {};
    if ((spec.transport ?? "in-process") === "in-process") {
      for (const p of providers) {
        if (p.factory) inProcessProviders[p.name] = p.factory;
        else if (p.fixture !== "installed" && IN_PROCESS[p.fixture]) {
          inProcessProviders[p.name] = this.#shared(p.name, p.fixture);
        }
      }
    }
    const lines: string[] = ["required_providers {"];
    for (const p of providers) {
      if (p.firstParty) {
        const isolation = p.isolation ? `, isolation = "${p.isolation}"` : "";
        lines.push(
          `  ${p.name} = { source = "pluggableharness/${p.firstParty}", version = ">= 0.0.0"${isolation} }`,
        );
        continue;
      }
      lines.push(`  ${p.name} = { source = "github.com/test/provider-${p.name}", version = ">= 0.0.0" }`);
      devOverrides[p.name] = FIXTURES[p.fixture as FixtureName];
    }
    lines.push("}", "");
    for (const p of providers) {
      const attrs = { ...p.attrs };
      // An inline plugin (factory) takes only the attributes the test gives it.
      const fixture = p.factory ? undefined : p.fixture;
      if (fixture === "model") attrs["script_dir"] ??= JSON.stringify(scriptDir);
      if (fixture === "tools" || fixture === "tools-plain") attrs["log_dir"] ??= JSON.stringify(logDir);
      if (fixture === "hooks") {
        attrs["name"] ??= JSON.stringify(p.name);
        attrs["log_file"] ??= JSON.stringify(join(logDir, "hooks.jsonl"));
      }
      if (fixture === "context") attrs["log_file"] ??= JSON.stringify(join(logDir, "context.jsonl"));
      if (fixture === "memory") attrs["log_file"] ??= JSON.stringify(join(logDir, "memory.jsonl"));
      lines.push(`provider "${p.name}" {`);
      for (const [k, v] of Object.entries(attrs)) lines.push(`  ${k} = ${v}`);
      lines.push("}", "");
    }
    const hcl = spec.hcl ?? "";
    if (!/agent_profile\s+"default"/.test(hcl)) {
      lines.push(
        'agent_profile "default" {',
        "  model {",
        "    primary {",
        '      provider = "model"',
        '      id       = "alpha"',
        "    }",
        "  }",
        providers.some((p) => p.name === "tools") ? '  tools = ["tools.*"]' : "",
        "}",
        "",
      );
    }
    lines.push(hcl);
    if (!spec.sandbox && !/^settings\s*\{/m.test(hcl)) lines.push("settings {", '  sandbox = "off"', "}", "");
    if (!spec.reuse) writeFileSync(join(projectDir, "agent.hcl"), lines.join("\n"));
    const clock = new FakeClock();
    const logs: KernelLogRecord[] = [];
    const traces: TraceEvent[] = [];
    const kernel = await createKernel({
      projectDir,
      installationRoot: root,
      env: { HOME: root, XDG_CONFIG_HOME: join(root, "config"), ...spec.env },
      stateDir,
      devOverrides,
      globalConfig: false,
      pool: this.pool,
      inProcessProviders,
      clock,
      trace: (e) => traces.push(e),
      logSink: (r) => logs.push(r),
      durability: spec.durability ?? "normal",
      ...(spec.headlessAsk ? { headlessAsk: spec.headlessAsk } : {}),
      ...(spec.limits ? { limits: spec.limits } : {}),
      ...(spec.tolerateProviderFailures ? { tolerateProviderFailures: true } : {}),
      ...(spec.vendorThrottle ? { vendorThrottle: spec.vendorThrottle } : {}),
      ...(spec.telemetryResource ? { telemetryResource: spec.telemetryResource } : {}),
    });
    const clients: TestClient[] = [];
    const vendorIds = new Map<string, string>();
    const tk: TestKernel = {
      kernel,
      root,
      projectDir,
      stateDir,
      scriptDir,
      logDir,
      clock,
      logs,
      traces,
      script: (name, script) => writeFileSync(join(scriptDir, `${name}.json`), JSON.stringify(script)),
      requests: (scenario) =>
        readJsonl(join(scriptDir, `${scenario}.requests.jsonl`)) as ReturnType<TestKernel["requests"]>,
      invocations: () => readJsonl(join(logDir, "invocations.jsonl")),
      hookLog: (file = "hooks.jsonl") => readJsonl(join(logDir, file)),
      client: (options = {}) => {
        const c = new TestClient(
          kernel.frontends.connect({ interactive: options.interactive ?? true, name: "test" }),
        );
        clients.push(c);
        return c;
      },
      file: (sessionId) => new SessionFile(sessionId, stateDir),
      vendorId: (sessionId, callId) => {
        const key = `${sessionId}\u0000${callId}`;
        let v = vendorIds.get(key);
        if (v === undefined) {
          for (const [c, vendor] of vendorIdsOf(new SessionFile(sessionId, stateDir).messages()))
            vendorIds.set(`${sessionId}\u0000${c}`, vendor);
          v = vendorIds.get(key);
        }
        return v ?? callId;
      },
      callId: (sessionId, vendorId) => new SessionFile(sessionId, stateDir).callId(vendorId),
      close: async () => {
        for (const c of clients) c.close();
        await kernel.shutdown();
      },
    };
    for (const [name, script] of Object.entries(spec.scripts ?? {})) tk.script(name, script);
    this.#kernels.push(tk);
    return tk;
  }

  async dispose(): Promise<void> {
    for (const k of this.#kernels) await k.close().catch(() => {});
    await this.pool.shutdown();
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
  }
}

function readJsonl(file: string): Array<Record<string, Loose>> {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, Loose>);
  } catch {
    return [];
  }
}

// ---- frontend client ----------------------------------------------------------------------

let requestCounter = 0;

export class TestClient {
  readonly conn: FrontendConnection;
  readonly events: ServerEvent[] = [];
  #waiters: Array<() => void> = [];
  #ended = false;

  constructor(conn: FrontendConnection) {
    this.conn = conn;
    void (async () => {
      for await (const e of conn.events) {
        this.events.push(e);
        this.#wake();
      }
      this.#ended = true;
      this.#wake();
    })();
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  send(event: ClientEventInit): void {
    this.conn.send(event);
  }

  close(): void {
    this.conn.close();
  }

  /** The first event (from index `from`) matching `pred`; waits for it. */
  async waitFor(pred: (e: ServerEvent) => boolean, from = 0, timeoutMs = 15_000): Promise<ServerEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(pred);
      if (found) return found;
      if (this.#ended) throw new Error("the connection ended before the expected event arrived");
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `timed out waiting for an event; got: ${this.events.map((e) => e.event.case).join(", ")}`,
        );
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  of<K extends NonNullable<ServerEvent["event"]["case"]>>(kind: K, sessionId?: string) {
    return this.events.filter(
      (e) => e.event.case === kind && (sessionId === undefined || e.sessionId === sessionId),
    ) as Array<ServerEvent & { event: Extract<ServerEvent["event"], { case: K }> }>;
  }

  async next<K extends NonNullable<ServerEvent["event"]["case"]>>(
    kind: K,
    pred: (v: Extract<ServerEvent["event"], { case: K }>["value"], e: ServerEvent) => boolean = () => true,
    from = 0,
  ): Promise<Extract<ServerEvent["event"], { case: K }>["value"]> {
    const e = await this.waitFor((ev) => ev.event.case === kind && pred(ev.event.value as never, ev), from);
    return e.event.value as never;
  }

  /** Creates a session with a prompt; resolves with its id. */
  async create(prompt: string, profile = ""): Promise<string> {
    const requestId = `create-${++requestCounter}`;
    this.send({
      event: {
        case: "createSession",
        value: {
          requestId,
          profile,
          initialPrompt: prompt ? [{ block: { case: "text", value: { text: prompt } } }] : [],
        },
      },
    });
    const e = await this.waitFor((ev) => ev.requestId === requestId);
    if (e.event.case !== "sessionCreated") {
      throw new Error(
        `create failed: ${e.event.case === "error" ? e.event.value.error?.message : e.event.case}`,
      );
    }
    return e.sessionId;
  }

  /** Waits for the session to reach a terminal status; returns it. */
  async finished(sessionId: string, from = 0): Promise<SessionStatus> {
    const u = await this.next(
      "sessionStatusUpdate",
      (v, e) => e.sessionId === sessionId && TERMINAL.has(v.status),
      from,
    );
    return u.status;
  }
}

// ---- reading a session file back -------------------------------------------------------------

export class SessionFile {
  readonly events: StoredEvent[];
  readonly ledger;
  readonly planItems;
  readonly producers;
  readonly meta;

  readonly sessionId: string;

  constructor(sessionId: string, dir: string) {
    this.sessionId = sessionId;
    const r = openSessionReader(sessionId, { dir });
    try {
      this.events = r.readEvents();
      this.ledger = r.costLedger();
      this.planItems = r.planItems();
      this.producers = r.producers();
      this.meta = r.meta();
    } finally {
      r.close();
    }
  }

  kinds(): string[] {
    return this.events.map((e) => e.kindText);
  }

  /** The kernel's id of the call the vendor (the script) named `vendorId`. */
  callId(vendorId: string): string {
    for (const [kernel, vendor] of vendorIdsOf(this.messages())) if (vendor === vendorId) return kernel;
    throw new Error(`no tool call with vendor id ${vendorId} in session ${this.sessionId}`);
  }

  /** The vendor's (scripted) id of a kernel call id; the id itself when it has none. */
  vendorId(callId: string): string {
    return vendorIdsOf(this.messages()).get(callId) ?? callId;
  }

  messages() {
    return this.events
      .filter((e) => e.kind === EventKind.MESSAGE && e.producer.category === PluginCategory.KERNEL)
      .map((e) => fromBinary(MessageEventSchema, e.payload));
  }

  toolResults() {
    return this.events
      .filter((e) => e.kind === EventKind.TOOL_RESULT)
      .map((e) => fromBinary(ToolResultEventSchema, e.payload));
  }

  plans() {
    return this.events
      .filter((e) => e.kind === EventKind.PLAN)
      .map((e) => fromBinary(PlanEventSchema, e.payload).plan!);
  }

  applies() {
    return this.events
      .filter((e) => e.kind === EventKind.APPLY)
      .map((e) => fromBinary(ApplyEventSchema, e.payload).apply!);
  }
}

/**
 * The tool_use ids and tool_result references of the history, in order, as the vendor's
 * ids (the scripted ones): the kernel's own ids are mapped back through each block's
 * vendor_id.
 */
export function toolUsePairing(messages: ReturnType<SessionFile["messages"]>): {
  uses: string[];
  results: string[];
} {
  const vendor = vendorIdsOf(messages);
  const uses: string[] = [];
  const results: string[] = [];
  for (const m of messages) {
    for (const b of m.message?.content ?? []) {
      if (b.block.case === "toolUse") uses.push(vendor.get(b.block.value.id) ?? b.block.value.id);
      if (b.block.case === "toolResult")
        results.push(vendor.get(b.block.value.toolUseId) ?? b.block.value.toolUseId);
    }
  }
  return { uses, results };
}

/** Kernel call id -> the vendor's id of the call (ToolUseBlock.vendor_id). */
export function vendorIdsOf(messages: ReturnType<SessionFile["messages"]>): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    for (const b of m.message?.content ?? []) {
      if (b.block.case === "toolUse" && b.block.value.vendorId)
        out.set(b.block.value.id, b.block.value.vendorId);
    }
  }
  return out;
}
