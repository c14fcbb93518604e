// The in-process transport keeps what the go-plugin transport guarantees: wire copies,
// deadlines, cancellation, status codes, a stream the caller stops reading, kernel
// callbacks attributed to the plugin, and a crash that fails calls in flight and brings
// back a reconfigured instance.
import { StatusError, service } from "@pluggableharness/plugin-sdk";
import { ToolService } from "@pluggableharness/protocol/tool";
import { PluginCrashedError, PluginLaunchError, RpcError } from "@pluggableharness/runtime";
import { describe, expect, it } from "vitest";
import { providerError } from "../../src/providers/grpc.ts";
import { InProcessHost, type InProcessPluginFactory } from "../../src/providers/in-process.ts";
import { ProviderCallError, ProviderStatus, ProviderUnavailableError } from "../../src/providers/ports.ts";

interface Seen {
  instances: number;
  configs: Array<{ instance: number; dir: unknown }>;
  requests: unknown[];
  aborted: string[];
  finalized: string[];
  callbacks: Array<{ method: string; plugin: string; request: unknown }>;
}

function fixture(): { factory: InProcessPluginFactory; seen: Seen } {
  const seen: Seen = { instances: 0, configs: [], requests: [], aborted: [], finalized: [], callbacks: [] };
  const factory: InProcessPluginFactory = (host) => {
    const instance = ++seen.instances;
    return {
      packageJson: { name: "@test/inproc", version: "1.2.3", pluggableharness: { name: "inproc" } },
      services: [
        service(ToolService, {
          getSchema: () => ({ tools: [] }),
          configure: (req) => {
            seen.configs.push({ instance, dir: req.config?.["dir"] });
            return { result: {} };
          },
          preview: async (req, ctx) => {
            seen.requests.push(req);
            const name = req.call?.toolName ?? "";
            if (name === "missing") throw new StatusError(ProviderStatus.NOT_FOUND, "no such thing");
            if (name === "boom") throw new Error("it broke");
            if (name === "log") {
              await ctx.kernel.log("info", "hello from the plugin");
              return {};
            }
            if (name === "hang") {
              await new Promise<void>((resolve) =>
                ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
              );
              seen.aborted.push(name);
              return {};
            }
            return { preview: { root: { node: { case: "text", value: { content: `for ${name}` } } } } };
          },
          async *invoke(req, ctx) {
            const id = req.call?.id ?? "";
            try {
              for (let i = 0; ; i++) {
                if (req.call?.toolName === "exit" && i === 1) host.exit(7);
                yield { event: { event: { case: "outputChunk", value: { data: new Uint8Array([i]) } } } };
                if (ctx.signal.aborted) return;
                await new Promise((r) => setTimeout(r, 1));
              }
            } finally {
              seen.finalized.push(id);
            }
          },
        }),
      ],
    };
  };
  return { factory, seen };
}

function host(factory: InProcessPluginFactory, seen?: Seen): InProcessHost {
  return new InProcessHost("inproc", factory, {
    callbacks: (peer) => ({
      log: (request: unknown) => {
        seen?.callbacks.push({ method: "log", plugin: peer.plugin, request });
        return {};
      },
    }),
    pluginLog: () => {},
  });
}

const call = (toolName: string, id = "c1") => ({
  call: { id, toolName, callContext: { sessionId: "s1", workingDirectory: "/w" } },
});

describe("the in-process transport", () => {
  it("describes the plugin from its package metadata, as serve() would", async () => {
    const { factory } = fixture();
    const d = await host(factory).describe();
    expect(d.categories).toEqual(["tool"]);
    expect(d.producers["tool"]).toMatchObject({ name: "inproc", version: "1.2.3", protocolVersion: 1 });
  });

  it("hands the plugin a wire copy of each request and the kernel a copy of each answer", async () => {
    const { factory, seen } = fixture();
    const h = host(factory);
    const request = call("write");
    const answer = await h.ports.tool.preview(request);
    expect(seen.requests[0]).not.toBe(request);
    expect((seen.requests[0] as { $typeName: string }).$typeName).toBe(
      "pluggableharness.tool.v1.PreviewRequest",
    );
    expect(answer.preview?.root?.node.case).toBe("text");
  });

  it("answers UNIMPLEMENTED for a method left out, the plugin's status code, INTERNAL for a throw", async () => {
    const { factory } = fixture();
    const h = host(factory);
    await expect(h.ports.tool.render({ kind: "x" })).rejects.toMatchObject({
      name: "ProviderCallError",
      code: ProviderStatus.UNIMPLEMENTED,
    });
    await expect(h.ports.model.getCapabilities({})).rejects.toMatchObject({
      code: ProviderStatus.UNIMPLEMENTED,
    });
    await expect(h.ports.tool.preview(call("missing"))).rejects.toMatchObject({
      code: ProviderStatus.NOT_FOUND,
      details: "no such thing",
    });
    await expect(h.ports.tool.preview(call("boom"))).rejects.toMatchObject({
      code: ProviderStatus.INTERNAL,
      details: "it broke",
    });
  });

  it("fails a call past its deadline with DEADLINE_EXCEEDED, and the handler's signal aborts", async () => {
    const { factory, seen } = fixture();
    const h = host(factory);
    await expect(h.ports.tool.preview(call("hang"), { timeoutMs: 20 })).rejects.toMatchObject({
      code: ProviderStatus.DEADLINE_EXCEEDED,
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(seen.aborted).toEqual(["hang"]);
  });

  it("rejects a cancelled call with the signal's reason", async () => {
    const { factory, seen } = fixture();
    const h = host(factory);
    const controller = new AbortController();
    const pending = h.ports.tool.preview(call("hang"), { signal: controller.signal });
    while (seen.requests.length === 0) await new Promise((r) => setImmediate(r));
    const reason = new Error("interrupted");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await new Promise((r) => setTimeout(r, 5));
    expect(seen.aborted).toEqual(["hang"]);
    // Cancelled before it starts: the plugin never sees it.
    await expect(h.ports.tool.preview(call("never"), { signal: controller.signal })).rejects.toBe(reason);
    expect(seen.requests).toHaveLength(1);
  });

  it("stops the plugin's stream when the kernel stops reading (its finally runs)", async () => {
    const { factory, seen } = fixture();
    const h = host(factory);
    let n = 0;
    for await (const _ of h.ports.tool.invoke(call("stream", "s1"))) if (++n === 3) break;
    await new Promise((r) => setTimeout(r, 10));
    expect(seen.finalized).toEqual(["s1"]);
  });

  it("a plugin that exits fails its calls as crashed; the next call meets a new instance configured again", async () => {
    const { factory, seen } = fixture();
    const h = host(factory);
    await h.ports.tool.configure({ config: { dir: "/a" } });
    const chunks: number[] = [];
    const run = async () => {
      for await (const r of h.ports.tool.invoke(call("exit"))) {
        if (r.event?.event.case === "outputChunk") chunks.push(r.event.event.value.data[0]!);
      }
    };
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect(err).toMatchObject({ reason: "crashed", message: 'plugin "inproc" exited with status 7' });
    expect(chunks).toEqual([0]);
    await h.ports.tool.preview(call("write"));
    expect(seen.instances).toBe(2);
    expect(seen.configs).toEqual([
      { instance: 1, dir: "/a" },
      { instance: 2, dir: "/a" },
    ]);
  });

  it("serves kernel callbacks as the calling plugin, with the call's session", async () => {
    const { factory, seen } = fixture();
    await host(factory, seen).ports.tool.preview(call("log"));
    expect(seen.callbacks).toHaveLength(1);
    expect(seen.callbacks[0]).toMatchObject({
      method: "log",
      plugin: "inproc",
      request: { sessionId: "s1" },
    });
  });
});

describe("the go-plugin transport's failures", () => {
  it("become transport-neutral: a status keeps its code, a crash or failed launch is unavailable", () => {
    const status = providerError("p", new RpcError(4, "too slow", "/x.Y/Z"));
    expect(status).toBeInstanceOf(ProviderCallError);
    expect(status).toMatchObject({ code: 4, details: "too slow", method: "/x.Y/Z" });
    const crash = providerError("p", new PluginCrashedError("p", "exited", 3, null));
    expect(crash).toMatchObject({ name: "ProviderUnavailableError", reason: "crashed" });
    const launch = providerError("p", new PluginLaunchError("p", "timeout", "no handshake"));
    expect(launch).toMatchObject({ name: "ProviderUnavailableError", reason: "launch_failed" });
    const other = new Error("something else");
    expect(providerError("p", other)).toBe(other);
  });
});
