// Prompt-cache keep-alive: after a completion whose request carried cache markers, the
// same request is re-sent with max_tokens 1 whenever the provider has been idle for the
// configured interval, at most maxPings times, so a long tool run does not let the
// 5-minute cache expire. Any real request cancels the pending ping. Pings are billed
// (mostly as cache reads); their usage is logged, since no stream carries it to the kernel.
import type { JsonValue } from "@bufbuild/protobuf";
import { type Logger, sendVendorRequest } from "@pluggableharness/model-kit";

export interface KeepaliveTarget {
  url: string;
  headers: Record<string, string>;
  body: Record<string, JsonValue>;
  thinkingBudget: number | undefined;
}

export interface KeepaliveOptions {
  intervalMs: number;
  maxPings: number;
  log: Logger;
}

export class Keepalive {
  private readonly opts: KeepaliveOptions;
  private timer: NodeJS.Timeout | undefined;
  private inflight: AbortController | undefined;
  /** Pings sent since the last real request (for tests and logs). */
  pings = 0;

  constructor(opts: KeepaliveOptions) {
    this.opts = opts;
  }

  /** Starts (or restarts) the idle countdown for this request prefix. */
  schedule(target: KeepaliveTarget): void {
    this.cancel();
    this.pings = 0;
    // The thinking configuration is part of the cached prefix, so it stays; max_tokens
    // only has to exceed a manual budget.
    const body: Record<string, JsonValue> = {
      ...target.body,
      stream: false,
      max_tokens: target.thinkingBudget !== undefined ? target.thinkingBudget + 1 : 1,
    };
    const tick = () => {
      this.timer = undefined;
      void this.ping(target, body).finally(() => {
        if (this.pings < this.opts.maxPings && this.inflight === undefined && this.timer === undefined) arm();
      });
    };
    const arm = () => {
      this.timer = setTimeout(tick, this.opts.intervalMs);
      this.timer.unref();
    };
    arm();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.inflight?.abort();
    this.inflight = undefined;
  }

  private async ping(target: KeepaliveTarget, body: Record<string, JsonValue>): Promise<void> {
    const controller = new AbortController();
    this.inflight = controller;
    this.pings++;
    try {
      const res = await sendVendorRequest({
        url: target.url,
        headers: { ...target.headers, accept: "application/json" },
        body,
        signal: controller.signal,
      });
      const text = await res.text();
      if (!res.ok) {
        this.opts.log.warn("keep-alive ping failed", { status: res.status, ping: this.pings });
        this.pings = this.opts.maxPings; // stop: the next real request starts over
        return;
      }
      const usage = (JSON.parse(text) as { usage?: Record<string, unknown> }).usage ?? {};
      this.opts.log.debug("keep-alive ping", {
        ping: this.pings,
        cache_read_input_tokens: usage["cache_read_input_tokens"],
        cache_creation_input_tokens: usage["cache_creation_input_tokens"],
        input_tokens: usage["input_tokens"],
        output_tokens: usage["output_tokens"],
      });
    } catch (err) {
      if (!controller.signal.aborted) {
        this.opts.log.warn("keep-alive ping failed", { error: (err as Error).name, ping: this.pings });
        this.pings = this.opts.maxPings;
      }
    } finally {
      if (this.inflight === controller) this.inflight = undefined;
    }
  }
}
