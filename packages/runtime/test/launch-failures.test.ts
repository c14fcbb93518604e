// Every way a launch can go wrong ends in a classified PluginLaunchError, quickly,
// with nothing left running.
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CrashReport,
  livePluginPids,
  PluginHost,
  type PluginHostOptions,
  PluginLaunchError,
  toolErrorFor,
} from "../src/index.ts";
import { fixture } from "./helpers.ts";

const hosts: PluginHost[] = [];
function host(opts: Partial<PluginHostOptions> & { command: string }): PluginHost {
  const h = new PluginHost({ name: "broken", launchTimeoutMs: 10_000, ...opts });
  hosts.push(h);
  return h;
}

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
  expect(livePluginPids()).toEqual([]);
});

async function launchError(h: PluginHost): Promise<PluginLaunchError> {
  const err = await h.start().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PluginLaunchError);
  return err as PluginLaunchError;
}

describe("launch failures", () => {
  it("rejects a plugin whose cookie does not match, quoting its explanation", async () => {
    const err = await launchError(
      host({
        command: fixture("tool-plugin.ts"),
        cookie: { key: "PLUGGABLEHARNESS_PLUGIN", value: "wrong" },
      }),
    );
    expect(err.reason).toBe("exited");
    expect(err.message).toContain("exited with status 1");
    expect(err.stderrTail.join("\n")).toContain("This binary is a plugin");
  });

  it("rejects a garbage first stdout line and quotes it", async () => {
    const err = await launchError(host({ command: fixture("garbage-plugin.ts") }));
    expect(err.reason).toBe("bad_handshake");
    expect(err.message).toContain('"Starting up, please wait..."');
  });

  it("gives up on a plugin that never prints its handshake within the launch timeout", async () => {
    const t0 = Date.now();
    const err = await launchError(host({ command: fixture("silent-plugin.ts"), launchTimeoutMs: 700 }));
    expect(err.reason).toBe("timeout");
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(err.message).toContain("700 ms");
  });

  it("gives up on a plugin that never answers its health check", async () => {
    const t0 = Date.now();
    const err = await launchError(host({ command: fixture("deaf-plugin.ts"), healthTimeoutMs: 500 }));
    expect(err.reason).toBe("unhealthy");
    expect(err.message).toContain("DEADLINE_EXCEEDED");
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it("refuses a socket directory whose paths would exceed the sun_path limit", async () => {
    const long = join(tmpdir(), "x".repeat(120));
    const err = await launchError(host({ command: fixture("tool-plugin.ts"), socketDir: long }));
    expect(err.reason).toBe("socket_path_too_long");
    expect(err.message).toMatch(/limit of 10[37]/);
  });

  it("gates the protocol version the plugin chose", async () => {
    const err = await launchError(host({ command: fixture("future-plugin.ts") }));
    expect(err.reason).toBe("version_mismatch");
    expect(err.message).toContain("protocol version 99");
  });

  it("reports a plugin that exits before the handshake, with its stderr", async () => {
    const err = await launchError(host({ command: fixture("early-exit-plugin.ts") }));
    expect(err.reason).toBe("exited");
    expect(err.message).toContain("status 7");
    expect(err.message).toContain("configuration file is missing");
  });

  it("reports an executable that does not exist", async () => {
    const err = await launchError(host({ command: "/nonexistent/plugin-binary" }));
    expect(err.reason).toBe("spawn_failed");
    expect(toolErrorFor(err)).toMatchObject({ category: 8 });
  });

  it("backs off between repeated failed launches and reports them", async () => {
    const reports: CrashReport[] = [];
    const h = host({
      command: fixture("garbage-plugin.ts"),
      backoff: { initialMs: 300, repeatedThreshold: 3 },
      onCrash: (r) => reports.push(r),
    });
    await launchError(h);
    await launchError(h); // immediate: the first relaunch does not wait
    const t0 = Date.now();
    await expect(h.client(ToolService).getSchema({})).rejects.toBeInstanceOf(PluginLaunchError);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250); // waited ~300 ms of backoff
    expect(reports.map((r) => r.consecutive)).toEqual([1, 2, 3]);
    expect(reports.at(-1)?.repeated).toBe(true);
    expect(reports.at(-1)?.nextDelayMs).toBeGreaterThan(500); // doubled
    expect(h.crashCount).toBe(0); // launch failures are not crashes of a running plugin
  });
});

describe("a plugin started by hand", () => {
  it("explains itself on stderr and exits with status 1", () => {
    const env: Record<string, string> = { PATH: process.env["PATH"] ?? "" };
    const r = spawnSync(process.execPath, [fixture("tool-plugin.ts")], {
      env,
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("This binary is a plugin");
    expect(r.stderr).toContain("agent.hcl");
  });
});
