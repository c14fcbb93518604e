// Prompt-cache keep-alive: after a completion whose request carried cache markers, the
// same request is re-sent, non-streaming and generating (almost) nothing, whenever the
// provider has been idle for the configured interval, at most maxPings times, so a long tool
// run does not let the 5-minute cache expire. Any real request cancels the pending ping.
//
// What a ping may generate depends on the thinking configuration, which is part of the
// cached message prefix and so must stay as it was:
// - no thinking: max_tokens 0, the vendor's cache pre-warm (no output at all);
// - adaptive thinking: max_tokens 1 (pre-warming does not combine with thinking);
// - a thinking budget: max_tokens 1 with the interleaved-thinking beta, under which the
//   budget may exceed max_tokens (otherwise max_tokens would have to exceed the budget, and
//   each ping could bill a whole budget of thinking).
// Pings are billed (mostly as cache reads). Their usage is kept and handed to the next
// completion's stream, so it reaches the session's cost ledger.
import type { JsonValue } from "@bufbuild/protobuf";
import { type Logger, sendVendorRequest, type UsageInit } from "@pluggableharness/model-kit";

/** Lets a thinking budget exceed max_tokens (Anthropic interleaved thinking). */
export const INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14";

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
  /** Usage of answered pings not yet reported in a stream. */
  private pending: UsageInit[] = [];

  constructor(opts: KeepaliveOptions) {
    this.opts = opts;
  }

  /** Starts (or restarts) the idle countdown for this request prefix. */
  schedule(target: KeepaliveTarget): void {
    this.cancel();
    this.pings = 0;
    const { body, headers } = pingRequest(target);
    const pingTarget = { ...target, headers };
    const tick = () => {
      this.timer = undefined;
      void this.ping(pingTarget, body).finally(() => {
        if (this.pings < this.opts.maxPings && this.inflight === undefined && this.timer === undefined) arm();
      });
    };
    const arm = () => {
      this.timer = setTimeout(tick, this.opts.intervalMs);
      this.timer.unref();
    };
    arm();
  }

  /** The usage of pings answered since the last call, for the next stream to report. */
  takeUsage(): UsageInit[] {
    const out = this.pending;
    this.pending = [];
    return out;
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
      const n = (k: string) => (typeof usage[k] === "number" ? (usage[k] as number) : 0);
      this.pending.push({
        input: n("input_tokens"),
        output: n("output_tokens"),
        cacheRead: n("cache_read_input_tokens"),
        cacheWrite: n("cache_creation_input_tokens"),
        components: [{ name: "keepalive_ping", value: 1 }],
      });
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

/** The ping for a request: same prefix and thinking settings, generating as little as allowed. */
export function pingRequest(target: KeepaliveTarget): {
  body: Record<string, JsonValue>;
  headers: Record<string, string>;
} {
  const thinking = target.body["thinking"] as Record<string, JsonValue> | undefined;
  const thinkingOn = thinking !== undefined && thinking["type"] !== "disabled";
  const body: Record<string, JsonValue> = { ...target.body, stream: false, max_tokens: thinkingOn ? 1 : 0 };
  const headers = { ...target.headers };
  if (target.thinkingBudget !== undefined) {
    const betas = (headers["anthropic-beta"] ?? "")
      .split(",")
      .map((b) => b.trim())
      .filter(Boolean);
    if (!betas.includes(INTERLEAVED_THINKING_BETA)) betas.push(INTERLEAVED_THINKING_BETA);
    headers["anthropic-beta"] = betas.join(",");
  }
  return { body, headers };
}
