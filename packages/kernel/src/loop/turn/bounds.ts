// Loop-level guards: the three independent bounds (turns, cost rolled up the session
// tree, wall clock), the doom-loop detector and the circuit breaker. Each one firing
// takes the same path: one more turn without tools, then the session ends.
import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { canonicalJson } from "../../domain/index.ts";

export type StopReason =
  | "max_turns"
  | "max_cost_usd"
  | "max_wall_clock_s"
  | "doom_loop"
  | "denial_breaker"
  | "crash_breaker";

/** The status a session ends with after the final-answer turn a guard forced. */
export function statusForStop(reason: StopReason): SessionStatus {
  switch (reason) {
    case "max_turns":
      return SessionStatus.ERROR_MAX_TURNS;
    case "max_cost_usd":
      return SessionStatus.ERROR_MAX_BUDGET_USD;
    case "max_wall_clock_s":
      return SessionStatus.ERROR_MAX_WALL_CLOCK;
    default:
      // Doom loops and tripped breakers have no status of their own: the session did
      // not finish its task, and the detail says which guard stopped it.
      return SessionStatus.FAILED;
  }
}

/**
 * Spend tracking along the session tree. Every cost, token and model turn is charged to
 * the session that spent it and to each ancestor; a session's remaining budget is the
 * smallest remainder on its path to the root (an ancestor's tighter bound always wins),
 * for dollars (max_cost_usd) and turns (max_turns) alike.
 */
export class CostNode {
  readonly limitUsd: number | undefined;
  readonly parent: CostNode | undefined;
  readonly limitTurns: number | undefined;
  #spentUsd = 0;
  #turns = 0;
  #inputTokens = 0;
  #outputTokens = 0;

  constructor(limitUsd?: number, parent?: CostNode, limitTurns?: number) {
    this.limitUsd = limitUsd;
    this.parent = parent;
    this.limitTurns = limitTurns;
  }

  /** Own spend plus every descendant's. */
  get spentUsd(): number {
    return this.#spentUsd;
  }

  /** Model turns run here and in every descendant. */
  get turns(): number {
    return this.#turns;
  }

  get inputTokens(): number {
    return this.#inputTokens;
  }

  get outputTokens(): number {
    return this.#outputTokens;
  }

  charge(usd: number, tokens?: { readonly input: number; readonly output: number }): void {
    for (let n: CostNode | undefined = this; n; n = n.parent) {
      n.#spentUsd += usd;
      if (tokens) {
        n.#inputTokens += tokens.input;
        n.#outputTokens += tokens.output;
      }
    }
  }

  /** One model turn ran in this session. */
  chargeTurn(): void {
    for (let n: CostNode | undefined = this; n; n = n.parent) n.#turns++;
  }

  /** +Infinity when no session on the path has a cost bound. */
  remainingUsd(): number {
    let remaining = Number.POSITIVE_INFINITY;
    for (let n: CostNode | undefined = this; n; n = n.parent) {
      if (n.limitUsd !== undefined) remaining = Math.min(remaining, n.limitUsd - n.#spentUsd);
    }
    return remaining;
  }

  /** +Infinity when no session on the path has a turn bound. */
  remainingTurns(): number {
    let remaining = Number.POSITIVE_INFINITY;
    for (let n: CostNode | undefined = this; n; n = n.parent) {
      if (n.limitTurns !== undefined) remaining = Math.min(remaining, n.limitTurns - n.#turns);
    }
    return remaining;
  }

  /** Starts a fresh count (a re-opened session's bounds reset). */
  reset(): void {
    this.#spentUsd = 0;
    this.#turns = 0;
    this.#inputTokens = 0;
    this.#outputTokens = 0;
  }
}

export interface BoundsInput {
  readonly maxTurns?: number;
  readonly maxWallClockS?: number;
  readonly turns: number;
  readonly elapsedMs: number;
  readonly cost: CostNode;
}

/** The first bound that has fired, checked independently in a fixed order. */
export function checkBounds(input: BoundsInput): StopReason | undefined {
  if (input.maxTurns !== undefined && input.turns >= input.maxTurns) return "max_turns";
  // An ancestor's max_turns counts its sub-agents' turns too.
  if (input.cost.remainingTurns() <= 0) return "max_turns";
  if (input.cost.remainingUsd() <= 0) return "max_cost_usd";
  if (input.maxWallClockS !== undefined && input.elapsedMs >= input.maxWallClockS * 1000) {
    return "max_wall_clock_s";
  }
  return undefined;
}

/** hash(tool name, canonical input): what the doom-loop detector compares. */
export function callHash(toolName: string, input: JsonObject | undefined): string {
  return createHash("sha256")
    .update(canonicalJson([toolName, input ?? {}]))
    .digest("hex");
}

/** Fires when the last `threshold` resource/data-source calls are identical. */
export class DoomLoopDetector {
  readonly threshold: number;
  readonly window: number;
  readonly #recent: string[] = [];

  constructor(threshold: number, window: number) {
    this.threshold = threshold;
    this.window = Math.max(window, threshold);
  }

  /** Records one call; true when it completes a run of `threshold` identical calls. */
  record(hash: string): boolean {
    this.#recent.push(hash);
    if (this.#recent.length > this.window) this.#recent.shift();
    if (this.#recent.length < this.threshold) return false;
    const tail = this.#recent.slice(-this.threshold);
    return tail.every((h) => h === tail[0]);
  }

  reset(): void {
    this.#recent.length = 0;
  }
}

/** How many denials trip the denial breaker, counted three ways. */
export interface DenialLimits {
  /** Denials in a row (any allowed decision resets the streak). */
  readonly consecutive: number;
  /** Denials among the last `window.decisions` decisions, however they interleave. */
  readonly window: { readonly denials: number; readonly decisions: number };
  /** Denials of one and the same call (tool and arguments) in a run. */
  readonly sameCall: number;
  /** Turns in a row with at least one denial, whatever else they ran. */
  readonly turns: number;
}

/**
 * The denial breaker (consecutive denials, denials in a sliding window of decisions,
 * the same call denied again and again, turns in a row that each had a denial) and
 * consecutive crashes per tool provider. Interleaving allowed calls resets only the
 * streak: a model that keeps retrying a denied call between allowed ones trips the
 * same-call count, one denied half the time trips the window, and one that meets a
 * denial turn after turn, however many calls it mixes in, trips the turn count.
 */
export class CircuitBreaker {
  readonly denials: DenialLimits;
  readonly crashThreshold: number;
  #streak = 0;
  #deniedTurns = 0;
  readonly #recent: boolean[] = [];
  readonly #deniedCalls = new Map<string, number>();
  readonly #crashes = new Map<string, number>();

  constructor(denials: number | DenialLimits, crashThreshold: number) {
    this.denials =
      typeof denials === "number"
        ? {
            consecutive: denials,
            window: { denials: Number.POSITIVE_INFINITY, decisions: 0 },
            sameCall: Number.POSITIVE_INFINITY,
            turns: Number.POSITIVE_INFINITY,
          }
        : denials;
    this.crashThreshold = crashThreshold;
  }

  /**
   * A plan/precheck decision (`call` identifies it: callHash of tool and arguments);
   * true when the denial breaker trips.
   */
  decision(denied: boolean, call?: string): boolean {
    const limits = this.denials;
    this.#streak = denied ? this.#streak + 1 : 0;
    this.#recent.push(denied);
    if (this.#recent.length > limits.window.decisions) this.#recent.shift();
    let same = 0;
    if (denied && call !== undefined) {
      same = (this.#deniedCalls.get(call) ?? 0) + 1;
      this.#deniedCalls.set(call, same);
    }
    const inWindow = this.#recent.filter(Boolean).length;
    return this.#streak >= limits.consecutive || inWindow >= limits.window.denials || same >= limits.sameCall;
  }

  /** A turn's calls are settled; true when it makes `turns` turns in a row with a denial. */
  turnEnded(hadDenial: boolean): boolean {
    this.#deniedTurns = hadDenial ? this.#deniedTurns + 1 : 0;
    return this.#deniedTurns >= this.denials.turns;
  }

  /** A finished call of `provider`; true when its crash breaker trips. */
  callEnded(provider: string, crashed: boolean): boolean {
    const n = crashed ? (this.#crashes.get(provider) ?? 0) + 1 : 0;
    this.#crashes.set(provider, n);
    return n >= this.crashThreshold;
  }

  get consecutiveDenials(): number {
    return this.#streak;
  }

  reset(): void {
    this.#streak = 0;
    this.#deniedTurns = 0;
    this.#recent.length = 0;
    this.#deniedCalls.clear();
    this.#crashes.clear();
  }
}
