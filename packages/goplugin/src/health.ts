// grpc.health.v1.Health for plugins. go-plugin hosts check service "plugin"; Go plugins
// report "" and "plugin" as SERVING, and so does this implementation by default.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { status as Status } from "@grpc/grpc-js";
import {
  Health,
  type HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@pluggableharness/protocol/health";
import { HEALTH_SERVICE_NAME } from "./constants.ts";
import { implement, StatusError } from "./server.ts";

export { ServingStatus };

export class HealthState {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<(service: string, status: ServingStatus) => void>();

  constructor(
    initial: Record<string, ServingStatus> = {
      "": ServingStatus.SERVING,
      [HEALTH_SERVICE_NAME]: ServingStatus.SERVING,
    },
  ) {
    for (const [k, v] of Object.entries(initial)) this.statuses.set(k, v);
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const w of this.watchers) w(service, status);
  }

  /** Marks every known service NOT_SERVING (used while shutting down). */
  shutdown(): void {
    for (const k of this.statuses.keys()) this.set(k, ServingStatus.NOT_SERVING);
  }

  /** grpc-js handlers for the Health service. */
  handlers() {
    return implement(Health, {
      check: (req) => {
        const status = this.statuses.get(req.service);
        if (status === undefined)
          throw new StatusError(Status.NOT_FOUND, `unknown service ${JSON.stringify(req.service)}`);
        return { status };
      },
      watch: (req, ctx) => this.watch(req.service, ctx.signal),
    });
  }

  private async *watch(
    service: string,
    signal: AbortSignal,
  ): AsyncGenerator<MessageInitShape<typeof HealthCheckResponseSchema>> {
    const queue: ServingStatus[] = [this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN];
    let wake: (() => void) | undefined;
    const watcher = (s: string, st: ServingStatus) => {
      if (s !== service) return;
      queue.push(st);
      wake?.();
    };
    const onAbort = () => wake?.();
    this.watchers.add(watcher);
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        const next = queue.shift();
        if (next !== undefined) {
          yield { status: next };
          continue;
        }
        await new Promise<void>((r) => {
          wake = r;
        });
        wake = undefined;
      }
    } finally {
      this.watchers.delete(watcher);
      signal.removeEventListener("abort", onAbort);
    }
  }
}
