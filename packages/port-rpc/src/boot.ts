// How a plugin learns it runs in a worker thread of the kernel: `workerData` carries this
// record under WORKER_DATA_KEY, with the port the kernel speaks on. A plugin started as a
// process has no workerData, so the same bundle serves either way.
import { isMainThread, type MessagePort, workerData } from "node:worker_threads";

export const WORKER_DATA_KEY = "pluggableharness.worker";
/** Bumped if the frame format changes incompatibly. */
export const WORKER_PROTOCOL = 1;

export interface WorkerBoot {
  readonly protocol: number;
  /** The plugin's end of the kernel's channel. */
  readonly port: MessagePort;
  /**
   * "port": serve over the MessagePort (the worker transport). "grpc": serve gRPC on a unix
   * socket as a process would and announce the handshake line over the port instead of
   * stdout (only the benchmark's channel comparison uses it).
   */
  readonly channel: "port" | "grpc";
  /** What process.cwd() answers inside the worker (a thread cannot chdir). */
  readonly cwd?: string;
}

/** The boot record when this code runs in a plugin worker, else undefined. */
export function workerBoot(data: unknown = isMainThread ? undefined : workerData): WorkerBoot | undefined {
  if (data === null || typeof data !== "object") return undefined;
  const boot = (data as Record<string, unknown>)[WORKER_DATA_KEY] as WorkerBoot | undefined;
  if (!boot || typeof boot !== "object" || !boot.port) return undefined;
  return boot;
}
