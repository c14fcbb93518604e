// "Any language": a tool provider written in Python (Debian's python3-grpcio, no
// generated code) launched by the kernel's launcher, completing a tool call and a
// kernel callback through the broker.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { PluginCategory } from "@pluggableharness/protocol/common";
import {
  file_plugin_grpc_broker,
  file_plugin_grpc_controller,
  file_plugin_grpc_stdio,
} from "@pluggableharness/protocol/goplugin";
import { file_grpc_health_v1_health } from "@pluggableharness/protocol/health";
import { file_pluggableharness_kernel_v1_kernel } from "@pluggableharness/protocol/kernel";
import { file_pluggableharness_tool_v1_tool, ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import { PluginHost } from "../src/index.ts";
import { collectLogs, fixture, isAlive, type RecordedCall, recordingCallbacks, waitGone } from "./helpers.ts";

const PYTHON = "/usr/bin/python3";
const hasPythonGrpc =
  spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" }).status === 0;
// In CI the test always runs (.ci/run installs python3-grpcio); elsewhere it needs it.
const skip = !process.env["CI"] && !hasPythonGrpc;

/** Every file the Python side needs, dependencies first. */
function descriptorSet(roots: DescFile[]): Uint8Array {
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    for (const d of f.dependencies) visit(d);
    ordered.push(f);
  };
  for (const r of roots) visit(r);
  return toBinary(
    FileDescriptorSetSchema,
    create(FileDescriptorSetSchema, { file: ordered.map((f) => f.proto) }),
  );
}

const dir = mkdtempSync(join(tmpdir(), "ph-py-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(skip)("a Python plugin", () => {
  it("is launched, described and completes a tool call and a kernel callback", async () => {
    const descriptors = join(dir, "descriptors.binpb");
    writeFileSync(
      descriptors,
      descriptorSet([
        file_grpc_health_v1_health,
        file_plugin_grpc_broker,
        file_plugin_grpc_controller,
        file_plugin_grpc_stdio,
        file_pluggableharness_tool_v1_tool,
        file_pluggableharness_kernel_v1_kernel,
      ]),
    );
    const calls: RecordedCall[] = [];
    const logs = collectLogs();
    const host = new PluginHost({
      name: "py",
      command: fixture("python/tool_plugin.py"),
      args: [descriptors],
      callbacks: recordingCallbacks(calls),
      logSink: logs.sink,
      launchTimeoutMs: 20_000,
    });
    try {
      const description = await host.describe();
      expect(description.categories).toEqual(["tool"]);
      expect(description.producers["tool"]).toMatchObject({
        name: "python-tools",
        version: "0.3.0",
        category: PluginCategory.TOOL,
      });

      const tools = host.client(ToolService);
      expect((await tools.getSchema({})).tools.map((t) => t.name)).toEqual(["upper", "log"]);
      const cases: string[] = [];
      let payload: unknown;
      for await (const ev of tools.invoke({
        call: { id: "c1", toolName: "upper", arguments: { text: "any language" } },
      })) {
        const e = ev.event!.event;
        cases.push(e.case ?? "");
        if (e.case === "result") payload = e.value.payload;
      }
      expect(cases).toEqual(["outputChunk", "result"]);
      expect(payload).toEqual({ text: "ANY LANGUAGE", language: "python" });

      for await (const _ of tools.invoke({
        call: { toolName: "log", callContext: { sessionId: "py-session" } },
      })) {
        // drain
      }
      expect(calls).toEqual([expect.objectContaining({ method: "log", sessionId: "py-session" })]);
      expect(calls[0]!.peer.plugin).toBe("py");

      const serving = logs.records.find((r) => r.message === "python plugin serving");
      expect(serving).toMatchObject({
        plugin: "py",
        logger: "python-tools",
        level: "debug",
        structured: true,
      });

      const pid = host.pid!;
      await host.shutdown();
      expect(await waitGone(pid)).toBe(true);
      expect(isAlive(pid)).toBe(false);
    } finally {
      await host.shutdown();
    }
  });
});
