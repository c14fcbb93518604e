// The contract between the runner and a scenario, and what a scenario's results look like.
import type { RecordedRequest } from "@pluggableharness/fake-vendors";
import type { BenchEnv, Harness } from "../harnesses/types.ts";
import type { BenchFake } from "./fake.ts";
import type { RunResult } from "./spawn.ts";
import type { Summary } from "./stats.ts";

export interface MetricDef {
  key: string;
  label: string;
  unit: "ms" | "MB" | "events/s" | "µs" | "count" | "USD" | "tokens";
  better: "lower" | "higher";
  /** Also report the 95th percentile. */
  p95?: boolean;
}

export type Sample = { ok: true; metrics: Record<string, number> } | { ok: false; reason: string };

export interface ScenarioContext {
  env: BenchEnv;
  fake: BenchFake;
  timeoutMs: number;
  /** This scenario's scratch directory. */
  dir: string;
  /** The fresh HOME of each harness for this benchmark run (configured to use the fake). */
  home(h: Pick<Harness, "id">): string;
  /** Record stdout line timestamps and hand every harness run to `observe` (profiling). */
  trace?: boolean;
  observe?(run: ObservedRun): void;
}

export interface ObservedRun {
  result: RunResult;
  requests: RecordedRequest[];
  other: RecordedRequest[];
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
  /** How far off a missed target is, in words. */
  miss?: string;
}

export interface HarnessResult {
  id: string;
  label: string;
  kind: Harness["kind"];
  version?: string;
  status: "ok" | "failed" | "unavailable" | "not applicable";
  reason?: string;
  runs: number;
  failures: string[];
  metrics: Record<string, Summary>;
  /** How many times better ours is on the primary metric (>1: ours better), measured in this run. */
  oursAdvantage?: number;
}

export interface ScenarioResult {
  id: string;
  title: string;
  what: string;
  runsPerHarness: number;
  metrics: MetricDef[];
  primary: string;
  harnesses: HarnessResult[];
  targets: TargetCheck[];
  notes: string[];
  /** Extra tables a scenario reports (the coding task's per-step bills). */
  tables?: ExtraTable[];
}

export interface ExtraTable {
  title: string;
  /** One paragraph saying what the table shows. */
  what: string;
  /** Header row first. */
  rows: string[][];
}

export interface Scenario {
  id: string;
  title: string;
  /** One paragraph: what is measured and how. */
  what: string;
  defaultRuns: number;
  metrics: MetricDef[];
  primary: string;
  /** Undefined when the scenario applies to `h`, else why not. */
  applies(h: Harness): string | undefined;
  setup?(ctx: ScenarioContext): Promise<void>;
  run(h: Harness, ctx: ScenarioContext, index: number): Promise<Sample>;
  /** Metrics derived from the summaries of all harnesses (e.g. latency added over the floor). */
  derive?(results: HarnessResult[]): void;
  targets(results: HarnessResult[]): TargetCheck[];
  notes?(results: HarnessResult[], ctx: ScenarioContext): string[];
  tables?(results: HarnessResult[]): ExtraTable[];
}

export function fmt(value: number, unit: MetricDef["unit"]): string {
  if (!Number.isFinite(value)) return "–";
  switch (unit) {
    case "ms":
      return value >= 10_000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(value < 10 ? 1 : 0)} ms`;
    case "MB":
      return `${value.toFixed(0)} MB`;
    case "events/s":
      return `${Math.round(value).toLocaleString("en-US")}/s`;
    case "µs":
      return `${value.toFixed(1)} µs`;
    case "count":
      return String(Math.round(value));
    case "USD":
      return `$${value < 0.01 ? value.toFixed(5) : value.toFixed(4)}`;
    case "tokens":
      return Math.round(value).toLocaleString("en-US");
  }
}
