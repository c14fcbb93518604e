// KernelClient.channel(): the raw connection to whatever the kernel serves at the
// callback broker ID, for services the typed clients do not wrap (bidi streams).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { create, type MessageShape } from "@bufbuild/protobuf";
import { type Client, Server, ServerCredentials, type ServerDuplexStream } from "@grpc/grpc-js";
import { Broker, KERNEL_CALLBACK_BROKER_ID, unixTarget } from "@pluggableharness/goplugin";
import {
  type ClientEvent,
  ClientEventSchema,
  FrontendService,
  type ServerEvent,
  ServerEventSchema,
} from "@pluggableharness/protocol/frontend";
import { ConnInfoSchema } from "@pluggableharness/protocol/goplugin";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { afterEach, describe, expect, it } from "vitest";
import { KernelConnection, kernelClient } from "../src/kernel.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("KernelClient.channel", () => {
  it("dials the kernel's broker endpoint and carries a bidirectional call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdk-channel-"));
    const socket = join(dir, "kernel.sock");
    const server = new Server();
    // An echoing Attach: every ClientEvent's session id comes back as a ServerEvent.
    server.addService(serviceDefinition(FrontendService), {
      attach: (call: ServerDuplexStream<ClientEvent, ServerEvent>) => {
        call.on("data", (ev: ClientEvent) =>
          call.write(create(ServerEventSchema, { sessionId: ev.sessionId })),
        );
        call.on("end", () => call.end());
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(unixTarget(socket), ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    cleanups.push(() => {
      server.forceShutdown();
      rmSync(dir, { recursive: true, force: true });
    });

    const broker = new Broker({ retainIds: [KERNEL_CALLBACK_BROKER_ID] });
    const stream = new PassThrough({ objectMode: true });
    broker.attach(stream as never);
    stream.emit(
      "data",
      create(ConnInfoSchema, { serviceId: KERNEL_CALLBACK_BROKER_ID, network: "unix", address: socket }),
    );
    const conn = new KernelConnection(broker);
    cleanups.push(() => conn.close());

    const client: Client = await kernelClient(conn).channel();
    // The same connection serves the typed kernel client and the raw channel.
    expect(await kernelClient(conn).channel()).toBe(client);
    const def = serviceDefinition(FrontendService)["attach"]!;
    const call = client.makeBidiStreamRequest(
      def.path,
      def.requestSerialize as (v: MessageShape<typeof ClientEventSchema>) => Buffer,
      def.responseDeserialize as (b: Buffer) => ServerEvent,
    );
    const got: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on("data", (ev: ServerEvent) => got.push(ev.sessionId));
      call.on("end", resolve);
      call.on("error", reject);
    });
    call.write(create(ClientEventSchema, { sessionId: "A" }));
    call.write(create(ClientEventSchema, { sessionId: "B" }));
    call.end();
    await done;
    expect(got).toEqual(["A", "B"]);
  });
});
