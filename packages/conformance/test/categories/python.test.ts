// "Any language": agent conform's hook checks against a hook subscriber written in
// Python (Debian's python3-grpcio, no generated code), launched as its own process over
// go-plugin like any third-party plugin.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import {
  file_plugin_grpc_broker,
  file_plugin_grpc_controller,
  file_plugin_grpc_stdio,
} from "@pluggableharness/protocol/goplugin";
import { file_grpc_health_v1_health } from "@pluggableharness/protocol/health";
import { file_pluggableharness_hook_v1_hook } from "@pluggableharness/protocol/hook";
import { afterAll, describe, expect, it } from "vitest";
import { formatReport, runConformance } from "../../src/index.ts";

const PYTHON = "/usr/bin/python3";
const hasPythonGrpc =
  spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" }).status === 0;
// In CI the test always runs (.ci/run installs python3-grpcio); elsewhere it needs it.
const skip = !process.env["CI"] && !hasPythonGrpc;

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

const dir = mkdtempSync(join(tmpdir(), "ph-conform-py-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(skip)("a Python hook subscriber", () => {
  it("passes agent conform's hook checks", async () => {
    const descriptors = join(dir, "descriptors.binpb");
    writeFileSync(
      descriptors,
      descriptorSet([
        file_grpc_health_v1_health,
        file_plugin_grpc_broker,
        file_plugin_grpc_controller,
        file_plugin_grpc_stdio,
        file_pluggableharness_hook_v1_hook,
      ]),
    );
    // agent conform takes one executable; a launcher hands the descriptors over.
    const launcher = join(dir, "python-hooks");
    const script = fileURLToPath(new URL("./fixtures/python/hook_plugin.py", import.meta.url));
    writeFileSync(launcher, `#!/bin/sh\nexec ${PYTHON} '${script}' '${descriptors}'\n`);
    chmodSync(launcher, 0o755);
    const report = await runConformance({ executable: launcher });
    expect(report.exitCode, formatReport(report)).toBe(0);
    expect(report.categories).toEqual(["hook"]);
    const status = Object.fromEntries(report.results.map((r) => [r.id, r.status]));
    // No category declares hook points, so all eight are dispatched.
    expect(
      Object.keys(status).filter((id) => id.startsWith("hook.observe.") && status[id] === "pass"),
    ).toHaveLength(8);
    expect(status).toMatchObject({
      "hook.describe": "pass",
      "hook.transform": "pass",
      "hook.veto": "pass",
      "hook.health": "pass",
    });
  }, 60_000);
});
