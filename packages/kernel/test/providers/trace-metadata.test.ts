// The kernel's calls to a plugin carry the current trace context (issue 36, point 5): the
// ports add `traceparent`/`tracestate` to each call's metadata, which crosses a worker
// plugin's MessagePort in the CALL frame's metadata slot exactly as it crosses gRPC for a
// process plugin. (The process path, with a plugin exporting its own span, is held by
// packages/cli/test/e2e-otel.test.ts.)
import { MessageChannel } from "node:worker_threads";
import { createClient, implement } from "@pluggableharness/goplugin";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { ModelService } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { PortEndpoint } from "../../../port-rpc/src/index.ts";
import { grpcPorts } from "../../src/providers/grpc.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function worker(seen: Array<Record<string, unknown>>) {
  const { port1, port2 } = new MessageChannel();
  const caller = new PortEndpoint(port1);
  const callee = new PortEndpoint(port2);
  const record = (md: { get(k: string): unknown[] }) =>
    seen.push({
      traceparent: md.get("traceparent")[0],
      tracestate: md.get("tracestate")[0],
    });
  callee.server.addService(
    serviceDefinition(HookSubscriberService),
    implement(HookSubscriberService, {
      dispatchHook: (_req, ctx) => {
        record(ctx.metadata);
        return {};
      },
    }),
  );
  callee.server.addService(
    serviceDefinition(ModelService),
    implement(ModelService, {
      async *streamCompletion(_req, ctx) {
        record(ctx.metadata);
        yield {};
      },
    }),
  );
  return caller;
}

describe("trace context on plugin calls", () => {
  it("adds the current span's context to unary and streaming calls", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const caller = worker(seen);
    let carrier: Record<string, string> = { traceparent: TRACEPARENT, tracestate: "vendor=1" };
    const ports = grpcPorts(
      "p",
      (s) => createClient(s, caller.channel),
      () => carrier,
    );
    await ports.hook.dispatchHook({});
    for await (const _ of ports.model.streamCompletion({})) {
      // drained
    }
    // Outside any span: nothing is added.
    carrier = {};
    await ports.hook.dispatchHook({});
    expect(seen).toEqual([
      { traceparent: TRACEPARENT, tracestate: "vendor=1" },
      { traceparent: TRACEPARENT, tracestate: "vendor=1" },
      { traceparent: undefined, tracestate: undefined },
    ]);
    caller.close();
  });
});
