// serve() seen from a raw go-plugin host's point of view: the process, its stdout
// handshake line and the services on its socket, without the runtime package.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, credentials } from "@grpc/grpc-js";
import {
  CHANNEL_OPTIONS,
  createClient,
  PLUGGABLEHARNESS_COOKIE,
  parseHandshake,
  unixTarget,
} from "@pluggableharness/goplugin";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { GRPCController } from "@pluggableharness/protocol/goplugin";
import { Health } from "@pluggableharness/protocol/health";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";

const plugin = fileURLToPath(new URL("./fixtures/versions-plugin.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ph-sdk-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(env: Record<string, string>): {
  child: ChildProcess;
  line: Promise<string>;
  stderr: () => string;
} {
  const child = spawn(process.execPath, [plugin], {
    env: {
      PATH: process.env["PATH"] ?? "",
      [PLUGGABLEHARNESS_COOKIE.key]: PLUGGABLEHARNESS_COOKIE.value,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const line = new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  return { child, line, stderr: () => err };
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((r) => {
    if (child.exitCode !== null) r(child.exitCode);
    else child.once("exit", (code) => r(code));
  });

describe("serve()", () => {
  it("negotiates, binds in PLUGIN_UNIX_SOCKET_DIR, ignores SIGINT and stops on Shutdown", async () => {
    const p = start({ PLUGIN_PROTOCOL_VERSIONS: "2,1,7", PLUGIN_UNIX_SOCKET_DIR: dir });
    const h = parseHandshake(await p.line);
    expect(h).toMatchObject({ appVersion: 2, network: "unix", protocol: "grpc", serverCert: "" });
    expect(h.address.startsWith(join(dir, "plugin"))).toBe(true);
    expect(existsSync(h.address)).toBe(true);

    const client = new Client(unixTarget(h.address), credentials.createInsecure(), CHANNEL_OPTIONS);
    try {
      const health = createClient(Health, client);
      expect((await health.check({ service: "plugin" })).status).toBe(1);
      expect((await health.check({ service: "" })).status).toBe(1);
      await expect(health.check({ service: "other" })).rejects.toMatchObject({ status: "NOT_FOUND" });

      const tools = createClient(ToolService, client);
      expect((await tools.describe({})).producer).toMatchObject({
        name: "provider-widgets",
        version: "2.0.1",
        source: "",
        category: PluginCategory.TOOL,
        protocolVersion: 2,
      });
      await expect(tools.invoke({})[Symbol.asyncIterator]().next()).rejects.toMatchObject({
        status: "UNIMPLEMENTED",
      });

      // A signal is delivered before the process runs again, so answering a call
      // after kill() returned proves SIGINT did not terminate it.
      p.child.kill("SIGINT");
      expect((await health.check({ service: "plugin" })).status).toBe(1);
      expect(p.child.exitCode).toBeNull();

      await createClient(GRPCController, client).shutdown({});
      expect(await exitOf(p.child)).toBe(0);
      // grpc-js removes its socket on shutdown.
      expect(existsSync(h.address)).toBe(false);
    } finally {
      client.close();
      p.child.kill("SIGKILL");
    }
  });

  it("answers its lowest version when the host offers none it speaks", async () => {
    const p = start({ PLUGIN_PROTOCOL_VERSIONS: "5", PLUGIN_UNIX_SOCKET_DIR: dir });
    try {
      expect(parseHandshake(await p.line).appVersion).toBe(1);
    } finally {
      p.child.kill("SIGKILL");
    }
  });

  it("exits with an explanation when its socket path would be too long", async () => {
    const p = start({ PLUGIN_UNIX_SOCKET_DIR: join(dir, "d".repeat(110)) });
    await expect(p.line).rejects.toThrow(/exited 1/);
    expect(p.stderr()).toMatch(/over this platform's limit of 10[37]/);
  });
});
