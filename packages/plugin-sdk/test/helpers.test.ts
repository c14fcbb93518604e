import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Broker } from "@pluggableharness/goplugin";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { DispatchHookRequestSchema, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { EventKind, KernelCallbackService } from "@pluggableharness/protocol/kernel";
import { ModelService, StreamCompletionRequestSchema } from "@pluggableharness/protocol/model";
import { InvokeRequestSchema, ToolService } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  callContextPath,
  categoryFromName,
  categoryOfService,
  createLogger,
  extractCallContext,
  NoSessionError,
  producerFor,
  readPackageMetadata,
} from "../src/index.ts";
import { KernelConnection, kernelClient } from "../src/kernel.ts";

describe("call context attribution", () => {
  it("finds the CallContext wherever a request carries it", () => {
    expect(callContextPath(InvokeRequestSchema)).toEqual(["call", "callContext"]);
    expect(callContextPath(StreamCompletionRequestSchema)).toEqual(["callContext"]);
    expect(callContextPath(DispatchHookRequestSchema)).toEqual(["callContext"]);
    expect(callContextPath(KernelCallbackService.method.emit.input)).toBeUndefined();
  });

  it("extracts it from a request, tolerating absent parents", () => {
    const req = create(InvokeRequestSchema, {
      call: { toolName: "x", callContext: { sessionId: "S", turnId: "T" } },
    });
    expect(extractCallContext(InvokeRequestSchema, req)).toMatchObject({ sessionId: "S", turnId: "T" });
    expect(extractCallContext(InvokeRequestSchema, create(InvokeRequestSchema, {}))).toBeUndefined();
  });
});

describe("Describe metadata", () => {
  it("derives the category from the service's proto package", () => {
    expect(categoryOfService(ToolService)).toBe(PluginCategory.TOOL);
    expect(categoryOfService(ModelService)).toBe(PluginCategory.MODEL);
    expect(categoryOfService(HookSubscriberService)).toBe(PluginCategory.UNSPECIFIED);
    expect(categoryFromName("memory")).toBe(PluginCategory.MEMORY);
    expect(categoryFromName("kernel")).toBe(PluginCategory.UNSPECIFIED);
    expect(categoryFromName("bogus")).toBe(PluginCategory.UNSPECIFIED);
  });

  it("builds the producer from package.json fields", () => {
    const meta = { name: "@acme/provider-foo", version: "v1.4.0" };
    expect(producerFor(meta, PluginCategory.TOOL, 1)).toEqual({
      name: "provider-foo",
      version: "1.4.0",
      source: "",
      category: PluginCategory.TOOL,
      protocolVersion: 1,
    });
    const named = { ...meta, pluggableharness: { name: "foo", source: "github.com/acme/provider-foo" } };
    expect(producerFor(named, PluginCategory.MODEL, 2)).toMatchObject({
      name: "foo",
      source: "github.com/acme/provider-foo",
    });
  });

  it("reads package.json from a URL or path and rejects one without name or version", () => {
    const dir = mkdtempSync(join(tmpdir(), "ph-meta-"));
    try {
      const good = join(dir, "package.json");
      writeFileSync(good, JSON.stringify({ name: "p", version: "1.0.0" }));
      expect(readPackageMetadata(good).name).toBe("p");
      expect(readPackageMetadata(new URL(`file://${good}`)).version).toBe("1.0.0");
      const bad = join(dir, "bad.json");
      writeFileSync(bad, JSON.stringify({ name: "p" }));
      expect(() => readPackageMetadata(bad)).toThrow(/needs a string "name" and "version"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("plugin logging", () => {
  it("writes hclog JSON lines at or above the minimum level", () => {
    const dir = mkdtempSync(join(tmpdir(), "ph-log-"));
    const file = join(dir, "log");
    const fd = openSync(file, "w");
    try {
      const log = createLogger("widgets", "info", fd);
      log.debug("hidden");
      log.info("shown", { n: 1 });
      log.named("retry").fatal("still running");
    } finally {
      closeSync(fd);
    }
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    rmSync(dir, { recursive: true, force: true });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ "@level": "info", "@message": "shown", "@module": "widgets", n: 1 });
    expect(lines[1]).toMatchObject({ "@level": "fatal", "@module": "widgets.retry" });
  });
});

describe("kernel client", () => {
  it("refuses to emit without a session instead of sending an unattributed event", async () => {
    const kernel = kernelClient(new KernelConnection(new Broker()));
    await expect(
      kernel.emit({ kind: EventKind.TOOL_RESULT, payload: new Uint8Array() }),
    ).rejects.toBeInstanceOf(NoSessionError);
  });
});
