// Everything the agent loop needs from the kernel around it, passed explicitly.
import type { AgentConfig, PolicyEngine, SecretMask, Settings } from "@pluggableharness/config";
import type { ProducerRef } from "@pluggableharness/protocol/common";
import type { InvocationTracker } from "../callbacks/invocations.ts";
import type { KernelClock } from "../clock.ts";
import type { ToolLocks } from "../domain/index.ts";
import type { EventRenderer } from "../frontends/renderer.ts";
import type { HookDispatcher } from "../hooks/dispatcher.ts";
import type { KernelLogger } from "../log.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { Tracer } from "../trace.ts";
import type { VendorThrottle } from "./vendor-throttle.ts";

export interface LoopLimits {
  /** Deadline of one Preview call; a slow or failing Preview leaves the item without one. */
  readonly previewTimeoutMs: number;
  /** Deadline of one context provider's Contribute. */
  readonly contributeTimeoutMs: number;
  /** Consecutive deny decisions that trip the circuit breaker. */
  readonly denialBreaker: number;
  /** Deny decisions among the last `decisions` that trip it, however they interleave. */
  readonly denialWindow: { readonly denials: number; readonly decisions: number };
  /** Denials of one and the same call (tool and arguments) in a run that trip it. */
  readonly sameCallDenials: number;
  /** Turns in a row with at least one denial that trip it. */
  readonly deniedTurns: number;
  /** Consecutive crashed calls of one tool provider that trip the circuit breaker. */
  readonly crashBreaker: number;
  /** Model-call retries a whole session may spend (the per-call cap is settings.retry.max_retries). */
  readonly maxSessionRetries: number;
  /** Tokens kept free for the answer and overhead when sizing context budgets. */
  readonly reservedOutputTokens: number;
}

export const DEFAULT_LIMITS: Omit<LoopLimits, "maxSessionRetries"> = {
  previewTimeoutMs: 2_000,
  contributeTimeoutMs: 10_000,
  denialBreaker: 5,
  denialWindow: { denials: 10, decisions: 20 },
  sameCallDenials: 3,
  deniedTurns: 5,
  crashBreaker: 3,
  reservedOutputTokens: 4_096,
};

export interface LoopDeps {
  readonly config: AgentConfig;
  readonly settings: Settings;
  readonly providers: ProviderRegistry;
  readonly hooks: HookDispatcher;
  readonly tracker: InvocationTracker;
  readonly renderer: EventRenderer;
  readonly clock: KernelClock;
  readonly log: KernelLogger;
  readonly trace: Tracer;
  /** Spans, metrics and log records for the OTLP export (telemetry/); the discarding one when off. */
  readonly telemetry: Telemetry;
  /** The producer of the events the kernel writes on its own account. */
  readonly kernelProducer: ProducerRef;
  /** Operator and ALWAYS rules; each session works on its own copy (forSession). */
  readonly policy: PolicyEngine;
  readonly projectDir: string;
  /**
   * Kernel-owned paths (agent.hcl, .agent/, the global config, state and cache
   * directories): the gate refuses every resource call that would write them.
   */
  readonly protectedPaths: readonly string[];
  /** Values of the variables withheld from commands (env()-read, secret-named): never put in a rule. */
  readonly secretValues: readonly string[];
  /**
   * Every withheld value in every encoding it is masked in (docs/security/mcp.md): output of
   * providers given a secret, log records, compaction summaries.
   */
  readonly secretMask: SecretMask;
  /** How an `ask` resolves when no interactive frontend is attached. */
  readonly headlessAsk: "deny" | "allow" | "wait";
  readonly limits: LoopLimits;
  /** The kernel-wide tool locks (ConcurrencySpec across every session of the kernel). */
  readonly locks: ToolLocks;
  /** ULIDs for turn, plan-item and message ids. */
  newId(): string;
  /** Shared pacing of model calls with other kernels (fleet mode); absent: none. */
  readonly throttle?: VendorThrottle;
}
