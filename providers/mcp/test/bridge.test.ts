// The bridge over the real plugin boundary (go-plugin subprocess), against real MCP servers
// from npm: server-everything over stdio (in bash's sandbox) and over Streamable HTTP on
// loopback, and server-filesystem. Listing, calls with arguments, progress, cancellation,
// structured content, resources, classification, the environment policy, a server that
// crashes and one that hangs.
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runConformance, ToolHarness } from "@pluggableharness/conformance";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING, FILESYSTEM } from "./servers.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const NODE = process.execPath;
const SANDBOXED = probeSandbox().ok;

let dir: string;
const harnesses: ToolHarness[] = [];

/** A bridge process with the kernel's ExecEnvironment answered as a real kernel would. */
async function bridge(config: Record<string, unknown>): Promise<{ h: ToolHarness; warnings: string[] }> {
  const h = new ToolHarness({ executable: MAIN, name: "mcp" });
  harnesses.push(h);
  h.kernel.execEnvironment = {
    variables: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir, ONLY_FROM_KERNEL: "yes" },
    protectedPaths: [join(dir, "agent.hcl")],
  };
  // The sandbox's /tmp is private: the scratch directory is the server's working directory
  // (and so its writable root) unless the test says otherwise.
  const res = await h.client.configure({ config: { cwd: dir, ...config } as never });
  const diags = res.result?.diagnostics ?? [];
  const errors = diags.filter((d) => d.severity === 1).map((d) => d.summary);
  if (errors.length > 0) throw new Error(`configuration rejected: ${errors.join("; ")}`);
  return { h, warnings: diags.map((d) => `${d.summary} ${d.detail}`) };
}

/**
 * A stdio proxy in front of server-everything: records every message the bridge sends, and
 * dies (exit 3) when a call echoes "crash" — a server that crashes mid-call.
 */
function proxyScript(log: string): string {
  const path = join(dir, `proxy-${Math.random().toString(36).slice(2)}.cjs`);
  writeFileSync(
    path,
    `const { spawn } = require("node:child_process");
const fs = require("node:fs");
const c = spawn(${JSON.stringify(NODE)}, [${JSON.stringify(EVERYTHING)}, "stdio"], { stdio: ["pipe", "inherit", "inherit"] });
process.stdin.on("data", (d) => {
  fs.appendFileSync(${JSON.stringify(log)}, d);
  if (d.toString().includes('"message":"crash"')) process.exit(3);
  c.stdin.write(d);
});
process.stdin.on("end", () => c.stdin.end());
c.on("exit", (code) => process.exit(code ?? 1));
`,
  );
  return path;
}

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ph-mcp-")));
});

afterAll(async () => {
  await Promise.all(harnesses.map((h) => h.close().catch(() => {})));
  rmSync(dir, { recursive: true, force: true });
});

describe("stdio: server-everything", () => {
  let h: ToolHarness;
  let log: string;

  beforeAll(async () => {
    log = join(dir, "everything.log");
    ({ h } = await bridge({
      command: [NODE, proxyScript(log)],
      env: { EXTRA_SETTING: "from-the-block" },
    }));
  }, 60_000);

  it("answers GetSchema with nothing before Configure and the server's tools after", async () => {
    const fresh = new ToolHarness({ executable: MAIN, name: "fresh" });
    harnesses.push(fresh);
    const before = await fresh.client.getSchema({});
    expect(before.tools).toEqual([]);
    expect(before.operationsFromConfig).toBe(true);
    expect(before.configSchema?.attributes.map((a) => a.name)).toContain("command");

    const s = await h.client.getSchema({});
    const names = s.tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "echo",
        "get-sum",
        "get-structured-content",
        "list_resources",
        "read_resource",
      ]),
    );
    const echo = s.tools.find((t) => t.name === "echo")!;
    // Ask by default: the server's readOnlyHint is not believed without trust_read_only_hint.
    expect(echo.kind).toBe(ToolKind.RESOURCE);
    expect(echo.risk).toBe(RiskClass.HIGH);
    expect(echo.idempotent).toBe(false);
    expect(echo.inputSchema?.properties.map((p) => p.name)).toEqual(["message"]);
    expect(echo.inputSchema?.required).toEqual(["message"]);
    const read = s.tools.find((t) => t.name === "read_resource")!;
    expect(read.kind).toBe(ToolKind.DATA_SOURCE);
  });

  it("calls a tool with arguments", async () => {
    const inv = await h.invoke("get-sum", { a: 2, b: 40 });
    expect(inv.error).toBeUndefined();
    expect(String(inv.result?.["text"])).toContain("42");
  });

  it("keeps structured content and declares the tool's outputSchema", async () => {
    const s = await h.client.getSchema({});
    const tool = s.tools.find((t) => t.name === "get-structured-content")!;
    const sc = tool.outputSchema?.properties.find((p) => p.name === "structured_content");
    expect(sc?.schema?.properties.map((p) => p.name)).toEqual(["temperature", "conditions", "humidity"]);
    const inv = await h.invoke("get-structured-content", { location: "Chicago" });
    expect(inv.result?.["structured_content"]).toMatchObject({ conditions: expect.any(String) });
  });

  it("turns progress notifications into progress events", async () => {
    const inv = await h.invoke("trigger-long-running-operation", { duration: 0.6, steps: 3 });
    const progress = inv.events.filter((e) => e.event.case === "progress").map((e) => e.event.value);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => (p as { fractionComplete?: number }).fractionComplete)).toEqual(
      [1 / 3, 2 / 3, 1].slice(0, progress.length),
    );
    expect(inv.events.at(-1)?.event.case).toBe("result");
  });

  it("forwards cancellation to the server (notifications/cancelled) and stays usable", async () => {
    const controller = new AbortController();
    const inv = await h.invoke(
      "trigger-long-running-operation",
      { duration: 20, steps: 20 },
      {
        signal: controller.signal,
        onEvent: (e) => {
          if (e.event.case === "progress") controller.abort();
        },
      },
    );
    expect(inv.aborted).toBe(true);
    const deadline = Date.now() + 5_000;
    while (!readFileSync(log, "utf8").includes("notifications/cancelled") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(readFileSync(log, "utf8")).toContain('"method":"notifications/cancelled"');
    const again = await h.invoke("echo", { message: "still here" });
    expect(again.result?.["text"]).toBe("Echo: still here");
  });

  it("lists and reads resources", async () => {
    const list = await h.invoke("list_resources", {});
    const resources = list.result?.["resources"] as Array<{ uri: string }>;
    expect(resources.length).toBeGreaterThan(0);
    const text = resources.find((r) => r.uri.endsWith(".md"))!;
    const read = await h.invoke("read_resource", { uri: text.uri });
    expect(String(read.result?.["text"]).length).toBeGreaterThan(20);
    const missing = await h.invoke("read_resource", { uri: "demo://nothing/here" });
    expect(missing.error).toBeDefined();
  });

  it("maps invalid arguments to invalid_arguments", async () => {
    const inv = await h.invoke("get-sum", { a: "two" });
    expect(inv.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
  });

  it("gives the server the kernel's exec environment plus the block's env, nothing of its own", async () => {
    const inv = await h.invoke("get-env", {});
    const env = JSON.parse(String(inv.result?.["text"])) as Record<string, string>;
    expect(env["ONLY_FROM_KERNEL"]).toBe("yes");
    expect(env["EXTRA_SETTING"]).toBe("from-the-block");
    // The plugin runtime's own variables (the go-plugin handshake) stay with the bridge.
    expect(Object.keys(env).filter((k) => k.startsWith("PLUGIN_"))).toEqual([]);
  });
});

describe("classification", () => {
  it("server-filesystem: high-risk resources by default; trusted hints make reads data sources, destructive ones critical", async () => {
    const root = join(dir, "fsroot");
    const { h } = await bridge({ command: [NODE, FILESYSTEM, dir], trust_read_only_hint: false });
    const byName = new Map((await h.client.getSchema({})).tools.map((t) => [t.name, t]));
    expect(byName.get("read_text_file")).toMatchObject({ kind: ToolKind.RESOURCE, risk: RiskClass.HIGH });
    expect(byName.get("write_file")).toMatchObject({ kind: ToolKind.RESOURCE, risk: RiskClass.CRITICAL });

    const trusted = await bridge({
      command: [NODE, FILESYSTEM, dir],
      trust_read_only_hint: true,
      disabled_tools: ["move_file"],
    });
    const t = new Map((await trusted.h.client.getSchema({})).tools.map((x) => [x.name, x]));
    expect(t.get("read_text_file")).toMatchObject({ kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY });
    expect(t.get("write_file")).toMatchObject({ kind: ToolKind.RESOURCE, risk: RiskClass.CRITICAL });
    expect(t.has("move_file")).toBe(false);

    const w = await h.invoke("write_file", { path: join(dir, "hello.txt"), content: "hi from mcp" });
    expect(w.error).toBeUndefined();
    expect(readFileSync(join(dir, "hello.txt"), "utf8")).toBe("hi from mcp");
    const outside = await h.invoke("read_text_file", { path: "/etc/hostname" });
    expect(outside.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect(existsSync(root)).toBe(false);
  }, 60_000);
});

describe.runIf(SANDBOXED)("sandbox", () => {
  it("a local server runs in bash's sandbox: writes outside its roots fail, inside succeed", async () => {
    // Outside the roots and outside /tmp (private in the sandbox): a real host directory.
    const cacheDir = fileURLToPath(new URL("../../../node_modules/.cache", import.meta.url));
    mkdirSync(cacheDir, { recursive: true });
    const outsideDir = realpathSync(mkdtempSync(join(cacheDir, "ph-mcp-outside-")));
    const outside = join(outsideDir, "escape.txt");
    const probe = join(dir, "probe.cjs");
    writeFileSync(
      probe,
      `const fs = require("node:fs");
let r = "written";
try { fs.writeFileSync(${JSON.stringify(outside)}, "x"); } catch (e) { r = e.code; }
fs.writeFileSync(${JSON.stringify(join(dir, "probe-result.txt"))}, r);
import(${JSON.stringify(pathToFileURL(EVERYTHING).href)});
`,
    );
    const { h } = await bridge({ command: [NODE, probe, "stdio"], roots: [dir] });
    expect((await h.client.getSchema({})).tools.length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, "probe-result.txt"), "utf8")).toBe("EROFS");
    expect(existsSync(outside)).toBe(false);
    // The control: without the sandbox the same server writes there.
    await bridge({ command: [NODE, probe, "stdio"], roots: [dir], sandbox: "off" });
    expect(readFileSync(join(dir, "probe-result.txt"), "utf8")).toBe("written");
    expect(existsSync(outside)).toBe(true);
    rmSync(outsideDir, { recursive: true, force: true });
  }, 60_000);
});

describe("failures", () => {
  it("a server that crashes mid-call takes the bridge down (the kernel reports process_crashed)", async () => {
    const log = join(dir, "crash.log");
    const { h } = await bridge({ command: [NODE, proxyScript(log)] });
    let failed: unknown;
    try {
      const inv = await h.invoke("echo", { message: "crash" });
      failed = inv.error;
    } catch (err) {
      failed = err;
    }
    expect(failed).toBeDefined();
    const deadline = Date.now() + 5_000;
    while (h.plugin.host.running && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(h.plugin.host.running).toBe(false);
    expect(h.plugin.host.crashCount).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("a server that never answers initialize is bounded by startup_timeout_ms: a warning, no tools, no process left", async () => {
    const pidFile = join(dir, "hang.pid");
    const script = join(dir, "hang.cjs");
    writeFileSync(
      script,
      `require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000);`,
    );
    const started = Date.now();
    const { h, warnings } = await bridge({
      command: [NODE, script],
      startup_timeout_ms: 800,
      sandbox: "off",
    });
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(warnings.join("\n")).toMatch(/did not finish within 800 ms/);
    expect((await h.client.getSchema({})).tools).toEqual([]);
    const pid = Number(readFileSync(pidFile, "utf8"));
    const deadline = Date.now() + 5_000;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(alive()).toBe(false);
  }, 60_000);

  it("a call that hangs ends with a timeout error at tool_timeout_ms", async () => {
    const { h } = await bridge({ command: [NODE, EVERYTHING, "stdio"], tool_timeout_ms: 400 });
    const started = Date.now();
    const inv = await h.invoke("trigger-long-running-operation", { duration: 10, steps: 2 });
    expect(inv.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 60_000);

  it("a command that does not exist is a warning naming it, not a failed session", async () => {
    const { h, warnings } = await bridge({ command: [join(dir, "no-such-server")] });
    expect(warnings.join("\n")).toContain("no-such-server");
    expect((await h.client.getSchema({})).tools).toEqual([]);
  });

  it("rejects a block with neither command nor url", async () => {
    const h = new ToolHarness({ executable: MAIN, name: "bad" });
    harnesses.push(h);
    expect(await h.configureErrors({})).toEqual([expect.stringContaining("needs command")]);
    expect(await h.configureErrors({ command: ["x"], url: "http://127.0.0.1:1/mcp" })).toEqual([
      expect.stringContaining("not both"),
    ]);
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("Streamable HTTP on loopback", () => {
  let server: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    server = spawn(NODE, [EVERYTHING, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      let text = "";
      const timer = setTimeout(() => reject(new Error(`the HTTP server did not start: ${text}`)), 20_000);
      server.stderr!.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("listening")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    url = `http://127.0.0.1:${port}/mcp`;
  }, 30_000);

  afterAll(() => {
    server?.kill("SIGKILL");
  });

  it("lists, calls, streams progress and reads resources over HTTP, sending the configured headers", async () => {
    const { h } = await bridge({ url, headers: { "X-Demo": "header-value" } });
    const names = (await h.client.getSchema({})).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "list_resources"]));
    const sum = await h.invoke("get-sum", { a: 1, b: 2 });
    expect(String(sum.result?.["text"])).toContain("3");
    const inv = await h.invoke("trigger-long-running-operation", { duration: 0.4, steps: 2 });
    expect(inv.events.filter((e) => e.event.case === "progress").length).toBeGreaterThanOrEqual(1);
    const list = await h.invoke("list_resources", {});
    expect((list.result?.["resources"] as unknown[] | undefined)?.length).toBeGreaterThan(0);
  }, 60_000);

  it("an unreachable server is a warning at start-up, bounded", async () => {
    const port = await freePort();
    const started = Date.now();
    const { warnings } = await bridge({ url: `http://127.0.0.1:${port}/mcp`, startup_timeout_ms: 2_000 });
    expect(warnings.join("\n")).toMatch(/unavailable/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("agent conform", () => {
  it("passes the tool-provider checks over the real plugin transport, cancellation included", async () => {
    const report = await runConformance({
      executable: MAIN,
      config: { command: [NODE, EVERYTHING, "stdio"] },
      samples: [
        { tool: "echo", arguments: { message: "hi" }, expect: "result" },
        { tool: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 }, cancel: true },
      ],
    });
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    expect(report.exitCode).toBe(0);
  }, 90_000);
});
