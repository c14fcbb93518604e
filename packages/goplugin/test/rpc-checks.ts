// The typed client/server checks, run over any channel that carries grpc-js handlers:
// grpc-js over a unix socket here (rpc.test.ts), the worker MessagePort in
// packages/port-rpc/test. One list of checks, so both channels keep the same semantics.
import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CallChannel,
  createClient,
  implement,
  RpcError,
  type ServiceClient,
  StatusError,
} from "../src/index.ts";
import { Echo } from "./fixtures/echo-service.ts";

export interface RpcChannelSetup {
  /** Serves `handlers` (grpc-js handlers for Echo) and returns a channel to call them on. */
  start(handlers: ReturnType<typeof implement>): Promise<CallChannel>;
  stop(): Promise<void> | void;
}

export function rpcChecks(label: string, setup: RpcChannelSetup): void {
  let echo: ServiceClient<typeof Echo>;
  const events: string[] = [];
  const errors: unknown[] = [];

  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => {
        clearTimeout(t);
        resolve();
      });
    });

  beforeAll(async () => {
    const channel = await setup.start(
      implement(
        Echo,
        {
          say: async (req) => {
            if (req.text === "denied") throw new StatusError(status.PERMISSION_DENIED, "not you");
            if (req.text === "boom") throw new Error("unexpected");
            return { text: req.text.toUpperCase() };
          },
          async *repeat(req, ctx) {
            try {
              for (let i = 0; i < req.count; i++) {
                if (i === req.failAt && req.failAt > 0)
                  throw new StatusError(status.RESOURCE_EXHAUSTED, `stop at ${i}`);
                yield { text: req.text, index: i };
                if (req.delayMs > 0) await sleep(req.delayMs, ctx.signal);
                if (ctx.signal.aborted) {
                  events.push(`observed cancellation at ${i}`);
                  return;
                }
              }
            } finally {
              events.push(`finally ${req.text}`);
            }
          },
        },
        { onError: (err) => errors.push(err) },
      ),
    );
    echo = createClient(Echo, channel);
  });

  afterAll(() => setup.stop());

  async function waitFor(pred: () => boolean): Promise<void> {
    const end = Date.now() + 3_000;
    while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  }

  describe(`typed clients and servers (${label})`, () => {
    it("runs unary calls from plain objects", async () => {
      const reply = await echo.say({ text: "hi" });
      expect(reply.text).toBe("HI");
      expect(reply.$typeName).toBe("test.echo.v1.Reply");
    });

    it("maps thrown errors to gRPC status codes, and those to RpcError", async () => {
      const denied = await echo.say({ text: "denied" }).catch((e: unknown) => e);
      expect(denied).toBeInstanceOf(RpcError);
      expect(denied).toMatchObject({
        code: status.PERMISSION_DENIED,
        status: "PERMISSION_DENIED",
        details: "not you",
      });
      expect((denied as RpcError).method).toBe("/test.echo.v1.Echo/Say");
      const boom = await echo.say({ text: "boom" }).catch((e: unknown) => e);
      expect(boom).toMatchObject({ code: status.INTERNAL, details: "unexpected" });
      expect(errors.map(String)).toContain("Error: unexpected");
    });

    it("streams many messages with backpressure", async () => {
      let n = 0;
      for await (const m of echo.repeat({ text: "x".repeat(1000), count: 5_000 })) {
        expect(m.index).toBe(n);
        n++;
      }
      expect(n).toBe(5_000);
    });

    it("delivers a mid-stream error after the messages before it", async () => {
      const got: number[] = [];
      const err = await (async () => {
        for await (const m of echo.repeat({ text: "e", count: 10, failAt: 3 })) got.push(m.index);
      })().catch((e: unknown) => e);
      expect(got).toEqual([0, 1, 2]);
      expect(err).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: "stop at 3" });
    });

    it("cancels on AbortSignal; the server observes it as control flow, not an error", async () => {
      const ac = new AbortController();
      const errorsBefore = errors.length;
      const got: number[] = [];
      const err = await (async () => {
        for await (const m of echo.repeat(
          { text: "cancel-me", count: 1_000, delayMs: 20 },
          { signal: ac.signal },
        )) {
          got.push(m.index);
          if (m.index === 2) ac.abort();
        }
      })().catch((e: unknown) => e);
      expect(err).toMatchObject({ name: "AbortError" });
      expect(got).toEqual([0, 1, 2]);
      await waitFor(() => events.includes("finally cancel-me"));
      // The server may have run ahead of the client by a few messages.
      expect(events.some((e) => /^observed cancellation at \d+$/.test(e))).toBe(true);
      expect(errors.length).toBe(errorsBefore);
    });

    it("cancels the call when the consumer stops iterating early", async () => {
      for await (const m of echo.repeat({ text: "break", count: 1_000, delayMs: 10 })) {
        if (m.index === 1) break;
      }
      await waitFor(() => events.includes("finally break"));
      expect(events).toContain("finally break");
    });

    it("rejects at once when the signal is already aborted, and enforces deadlines", async () => {
      const ac = new AbortController();
      ac.abort(new Error("caller gave up"));
      await expect(echo.say({ text: "x" }, { signal: ac.signal })).rejects.toThrow("caller gave up");
      const slow = (async () => {
        for await (const _ of echo.repeat({ text: "slow", count: 100, delayMs: 100 }, { timeoutMs: 150 })) {
          // keep reading
        }
      })();
      await expect(slow).rejects.toMatchObject({ status: "DEADLINE_EXCEEDED" });
    });

    it("rejects implementations with unknown method names", () => {
      expect(() => implement(Echo, { shout: async () => ({}) } as never)).toThrow(/no method "shout"/);
    });
  });
}
