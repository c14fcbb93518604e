// Runs one scenario over every selected harness, interleaved: run i goes through the
// harnesses in an order rotated by i, so slow drifts of a noisy machine hit everyone alike.
// Each harness first gets an untimed warm-up run (first-run set-up, compile caches); a
// harness whose warm-up fails twice, or that fails twice in a row later, is reported as
// failed with the reason instead of being silently dropped.
import type { Availability, Harness } from "../harnesses/types.ts";
import type { HarnessResult, Scenario, ScenarioContext, ScenarioResult } from "./scenario.ts";
import { summarize } from "./stats.ts";

export interface RunnerOptions {
  runs: number;
  log(line: string): void;
}

function oursPrefix(h: Harness, reason: string): string {
  return h.kind === "ours" && !reason.startsWith("not yet available")
    ? `not yet available: ${reason}`
    : reason;
}

export async function runScenario(
  scenario: Scenario,
  harnesses: readonly Harness[],
  availability: ReadonlyMap<string, Availability>,
  ctx: ScenarioContext,
  options: RunnerOptions,
): Promise<ScenarioResult> {
  const results = new Map<string, HarnessResult>();
  const samples = new Map<string, Record<string, number>[]>();
  const active: Harness[] = [];
  for (const h of harnesses) {
    const a = availability.get(h.id);
    const r: HarnessResult = {
      id: h.id,
      label: h.label,
      kind: h.kind,
      ...(a?.ok ? { version: a.version } : {}),
      status: "ok",
      runs: 0,
      failures: [],
      metrics: {},
    };
    results.set(h.id, r);
    samples.set(h.id, []);
    const na = scenario.applies(h);
    if (!a?.ok) {
      r.status = "unavailable";
      r.reason = a ? a.reason : "not prepared";
    } else if (na !== undefined) {
      r.status = "not applicable";
      r.reason = na;
    } else {
      active.push(h);
    }
  }

  if (scenario.setup && active.length > 0) await scenario.setup(ctx);

  const live = new Set<Harness>();
  for (const h of active) {
    const r = results.get(h.id)!;
    let warm = await scenario.run(h, ctx, -1);
    if (!warm.ok) {
      options.log(`  ${h.id}: warm-up failed (${warm.reason}); retrying once`);
      warm = await scenario.run(h, ctx, -1);
    }
    if (warm.ok) {
      live.add(h);
    } else {
      r.status = h.kind === "ours" ? "unavailable" : "failed";
      r.reason = oursPrefix(h, warm.reason);
      options.log(`  ${h.id}: ${r.reason}`);
    }
  }

  const streak = new Map<string, number>();
  for (let i = 0; i < options.runs && live.size > 0; i++) {
    const order = [...active.slice(i % active.length), ...active.slice(0, i % active.length)].filter((h) =>
      live.has(h),
    );
    for (const h of order) {
      const r = results.get(h.id)!;
      const s = await scenario.run(h, ctx, i);
      if (s.ok) {
        samples.get(h.id)!.push(s.metrics);
        r.runs++;
        streak.set(h.id, 0);
      } else {
        r.failures.push(s.reason);
        const n = (streak.get(h.id) ?? 0) + 1;
        streak.set(h.id, n);
        options.log(`  ${h.id} run ${i + 1}: ${s.reason}`);
        if (n >= 2) {
          live.delete(h);
          r.status = "failed";
          r.reason = `failed twice in a row: ${s.reason}`;
        }
      }
    }
    options.log(`  run ${i + 1}/${options.runs} done`);
  }

  for (const h of active) {
    const r = results.get(h.id)!;
    const all = samples.get(h.id)!;
    for (const m of scenario.metrics) {
      const values = all
        .map((s) => s[m.key])
        .filter((v): v is number => typeof v === "number" && Number.isFinite(v));
      if (values.length > 0) r.metrics[m.key] = summarize(values);
    }
  }
  const list = [...results.values()];
  scenario.derive?.(list);
  const primary = scenario.metrics.find((m) => m.key === scenario.primary)!;
  const ours = list.find((r) => r.kind === "ours")?.metrics[primary.key]?.median;
  for (const r of list) {
    const v = r.metrics[primary.key]?.median;
    if (ours === undefined || v === undefined || r.kind === "ours") continue;
    r.oursAdvantage = primary.better === "lower" ? v / ours : ours / v;
  }
  return {
    id: scenario.id,
    title: scenario.title,
    what: scenario.what,
    runsPerHarness: options.runs,
    metrics: scenario.metrics,
    primary: scenario.primary,
    harnesses: list,
    targets: scenario.targets(list),
    notes: scenario.notes?.(list, ctx) ?? [],
    ...(scenario.tables ? { tables: scenario.tables(list) } : {}),
  };
}
