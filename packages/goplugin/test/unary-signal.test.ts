// A unary handler's signal: aborted when the client cancels, also when the handler only
// looks at it afterwards; never aborted merely because an answered call's stream closed
// (grpc-js reports every closing stream as cancelled).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, credentials, Server, ServerCredentials } from "@grpc/grpc-js";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CHANNEL_OPTIONS,
  createClient,
  implement,
  SERVER_OPTIONS,
  type ServiceClient,
  unixTarget,
} from "../src/index.ts";
import { Echo } from "./fixtures/echo-service.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-unary-"));
const server = new Server(SERVER_OPTIONS);
let grpcClient: Client;
let echo: ServiceClient<typeof Echo>;

/** The signal each answered call saw, by request text. */
const signals = new Map<string, AbortSignal>();
let started!: () => void;
let proceed!: () => void;

beforeAll(async () => {
  server.addService(
    serviceDefinition(Echo),
    implement(Echo, {
      say: async (req, ctx) => {
        if (req.text === "late look") {
          // Does not touch the signal until after the client has gone.
          await new Promise<void>((resolve) => {
            proceed = resolve;
            started();
          });
          signals.set(req.text, ctx.signal);
          return { text: "too late" };
        }
        signals.set(req.text, ctx.signal);
        return { text: req.text };
      },
    }),
  );
  const path = join(dir, "echo.sock");
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(unixTarget(path), ServerCredentials.createInsecure(), (e) =>
      e ? reject(e) : resolve(),
    ),
  );
  grpcClient = new Client(unixTarget(path), credentials.createInsecure(), CHANNEL_OPTIONS);
  echo = createClient(Echo, grpcClient);
});

afterAll(() => {
  grpcClient.close();
  server.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 20));

describe("unary handler signal", () => {
  it("stays unaborted once the call is answered and its stream closes", async () => {
    expect((await echo.say({ text: "answered" })).text).toBe("answered");
    await settle(); // the stream's close (and grpc-js's "cancelled" report) comes after the answer
    expect(signals.get("answered")?.aborted).toBe(false);
  });

  it("is aborted when the client cancelled, even if the handler reads it only afterwards", async () => {
    const controller = new AbortController();
    const begun = new Promise<void>((resolve) => {
      started = resolve;
    });
    const call = echo.say({ text: "late look" }, { signal: controller.signal });
    await begun;
    controller.abort();
    await expect(call).rejects.toThrow();
    await settle();
    proceed();
    await settle();
    const signal = signals.get("late look");
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error | undefined)?.name).toBe("AbortError");
  });
});
