// One Redis connection as BullMQ wants it: no per-command retry limit (a blocking worker
// command must wait out a Redis restart rather than fail), reconnecting for ever.
import { Redis } from "ioredis";

export function redisConnection(url: string): Redis {
  const r = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(100 * times, 1_000),
  });
  // A Redis restart is survived by reconnecting; the error is not a crash.
  r.on("error", () => {});
  return r;
}
