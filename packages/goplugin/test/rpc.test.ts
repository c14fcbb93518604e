import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, credentials, Server, ServerCredentials } from "@grpc/grpc-js";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { CHANNEL_OPTIONS, SERVER_OPTIONS, unixTarget } from "../src/index.ts";
import { Echo } from "./fixtures/echo-service.ts";
import { rpcChecks } from "./rpc-checks.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-rpc-"));
const server = new Server(SERVER_OPTIONS);
let grpcClient: Client | undefined;

rpcChecks("grpc-js over a unix socket", {
  async start(handlers) {
    server.addService(serviceDefinition(Echo), handlers);
    const path = join(dir, "echo.sock");
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(unixTarget(path), ServerCredentials.createInsecure(), (e) =>
        e ? reject(e) : resolve(),
      ),
    );
    grpcClient = new Client(unixTarget(path), credentials.createInsecure(), CHANNEL_OPTIONS);
    return grpcClient;
  },
  stop() {
    grpcClient?.close();
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  },
});
