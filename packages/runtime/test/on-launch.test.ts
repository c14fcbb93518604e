// onLaunch: the host's hook for per-process setup (the kernel re-sends Configure there
// after a crash). It runs on every launch, before any other call reaches the process,
// and a failing hook fails the launch.
import { ToolService } from "@pluggableharness/protocol/tool";
import { afterEach, expect, it } from "vitest";
import { type LaunchContext, PluginHost, PluginLaunchError } from "../src/index.ts";
import { fixture, waitGone } from "./helpers.ts";

const hosts: PluginHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.shutdown()));
});

it("runs on the first launch and on every relaunch, before the caller's call", async () => {
  const seen: string[] = [];
  const host = new PluginHost({
    name: "tools",
    command: fixture("tool-plugin.ts"),
    onLaunch: async (ctx: LaunchContext) => {
      const schema = await ctx.client(ToolService).getSchema({});
      seen.push(`launch ${ctx.launch}: ${ctx.description.categories.join(",")} ${schema.tools.length} tools`);
    },
  });
  hosts.push(host);
  const tools = host.client(ToolService);
  for await (const _ of tools.invoke({ call: { toolName: "pid" } })) seen.push("call 1");
  await expect(async () => {
    for await (const _ of tools.invoke({ call: { toolName: "exit" } })) {
      // the process exits mid-call
    }
  }).rejects.toThrow();
  for await (const _ of tools.invoke({ call: { toolName: "pid" } })) seen.push("call 2");
  expect(seen).toEqual(["launch 1: tool 10 tools", "call 1", "launch 2: tool 10 tools", "call 2"]);
});

it("fails the launch and kills the process when the hook fails", async () => {
  let pid = 0;
  const host = new PluginHost({
    name: "tools",
    command: fixture("tool-plugin.ts"),
    onLaunch: async (ctx) => {
      pid = ctx.pid;
      throw new Error("configure rejected");
    },
  });
  hosts.push(host);
  const err = await host.start().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(PluginLaunchError);
  expect((err as PluginLaunchError).reason).toBe("setup_failed");
  expect((err as Error).message).toContain("configure rejected");
  expect(host.running).toBe(false);
  expect(pid).toBeGreaterThan(0);
  expect(await waitGone(pid)).toBe(true);
});
