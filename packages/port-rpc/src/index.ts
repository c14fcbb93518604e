// gRPC-shaped calls over a MessagePort: the worker transport of first-party plugins.
export { WORKER_DATA_KEY, WORKER_PROTOCOL, type WorkerBoot, workerBoot } from "./boot.ts";
export { PortChannel, PortEndpoint, type PortLike, PortServer, statusError } from "./endpoint.ts";
export { Code, STREAM_WINDOW } from "./frames.ts";
