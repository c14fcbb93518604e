// Bounded stalls (issue 15, point 4): a session on each first-party model provider in turn
// (run i uses provider i mod 5) has one good turn, then is resumed against a vendor that
// stalls before its headers or mid-stream, resets the connection, answers 200 with garbage,
// or refuses the connection. Every fault must end within its bound, be classified (retried
// when it is transient, reported at once when it is not), lose none of the first turn's
// events, and leave a session the next `agent run --continue` carries on.
import {
  type FakeVendor,
  type ScriptEntry,
  scenarios,
  startFakeVendor,
  unreachableUrl,
} from "@pluggableharness/fake-vendors";
import type { FaultOutcome, FaultScenario } from "../scenario.ts";
import {
  agent,
  eventSequences,
  killLeftovers,
  latestSession,
  processesIn,
  rng,
  scratch,
  writeConfig,
} from "../support.ts";

interface Vendor {
  readonly provider: string;
  readonly fake: "anthropic" | "openai-responses" | "gemini" | "xai" | "ollama";
  readonly model: string;
  readonly block: string;
  readonly base: (url: string) => string;
}

const KEYED = '  api_key  = env("VENDOR_KEY")\n  base_url = env("FAULT_BASE_URL")\n';
const VENDORS: Vendor[] = [
  {
    provider: "anthropic",
    fake: "anthropic",
    model: "claude-haiku-4-5-20251001",
    block: KEYED,
    base: (u) => u,
  },
  {
    provider: "openai",
    fake: "openai-responses",
    model: "gpt-5.4-mini",
    block: KEYED,
    base: (u) => `${u}/v1`,
  },
  { provider: "google", fake: "gemini", model: "gemini-2.5-flash-lite", block: KEYED, base: (u) => u },
  { provider: "xai", fake: "xai", model: "grok-4.3", block: KEYED, base: (u) => `${u}/v1` },
  {
    provider: "openai-compatible",
    fake: "ollama",
    model: "local-model",
    block: '  base_url = env("FAULT_BASE_URL")\n  dialect  = "ollama"\n  models   = ["local-model"]\n',
    base: (u) => `${u}/v1`,
  },
];

/** The idle timeout the scenarios run with; the bound each stalled run must stay within follows from it. */
const IDLE_MS = 1_500;

function config(v: Vendor): string {
  return `required_providers {
  ${v.provider} = {
    source  = "pluggableharness/${v.provider}"
    version = ">= 0.1.0"
  }
}

provider "${v.provider}" {
${v.block}}

agent_profile "default" {
  model {
    primary {
      provider = "${v.provider}"
      id       = "${v.model}"
    }
  }
}

settings {
  stream_idle_timeout_ms = ${IDLE_MS}
  retry {
    base_delay_ms  = 50
    backoff_factor = 2
    max_retries    = 3
  }
}
`;
}

interface Fault {
  /** What the vendor does on the resumed turn (undefined: the connection is refused). */
  readonly entry?: (random: () => number) => ScriptEntry;
  /** Retried and then answered, or reported at once. */
  readonly transient: boolean;
  /** What stderr must say about it. */
  readonly says: RegExp;
  /** The resumed run must end within this long. */
  readonly boundMs: number;
}

async function vendorRun(index: number, fault: Fault): Promise<FaultOutcome> {
  const random = rng(index * 104729 + 17);
  const v = VENDORS[index % VENDORS.length]!;
  const s = scratch();
  const dir = s.dir("project");
  const fake: FakeVendor = await startFakeVendor({ vendor: v.fake, script: [] });
  const env = (base: string) => ({
    ...s.env,
    VENDOR_KEY: "sk-faults-key",
    FAULT_BASE_URL: base,
    AGENT_NO_PRELAUNCH: "1",
  });
  try {
    writeConfig(dir, config(v));
    fake.push(scenarios.text("first answer"));
    const first = await agent(["run", "-p", "hello"], dir, env(v.base(fake.url)));
    const id = latestSession(s);
    if (first.code !== 0 || !id)
      return {
        survived: false,
        lost: 0,
        note: `${v.provider}: the first turn failed: ${first.stderr.slice(-200)}`,
      };
    const before = eventSequences(s, id);

    const base = fault.entry ? v.base(fake.url) : v.base(await unreachableUrl());
    const requestsBefore = fake.requests.length;
    if (fault.entry) fake.push(fault.entry(random));
    if (fault.transient) fake.push(scenarios.text("recovered"));
    const hit = await agent(["run", "-p", "again", "--resume", id], dir, env(base), fault.boundMs + 30_000);
    const after = new Set(eventSequences(s, id));
    const lost = before.filter((q) => !after.has(q)).length;
    const where = `${v.provider}`;
    if (hit.ms > fault.boundMs)
      return { survived: false, lost, note: `${where}: took ${hit.ms} ms (bound ${fault.boundMs} ms)` };
    if (!fault.says.test(hit.stderr))
      return {
        survived: false,
        lost,
        note: `${where}: not classified as expected: ${hit.stderr.slice(-300)}`,
      };
    if (fault.transient) {
      if (hit.code !== 0 || !hit.stdout.includes("recovered"))
        return {
          survived: false,
          lost,
          note: `${where}: not recovered (exit ${hit.code}): ${hit.stderr.slice(-200)}`,
        };
    } else {
      if (hit.code !== 1) return { survived: false, lost, note: `${where}: exit ${hit.code}, expected 1` };
      if (fault.entry && fake.requests.length - requestsBefore !== 1)
        return {
          survived: false,
          lost,
          note: `${where}: retried ${fake.requests.length - requestsBefore - 1} time(s)`,
        };
    }
    // The session goes on.
    fake.push(scenarios.text("still here"));
    const next = await agent(["run", "-p", "and now?", "--continue"], dir, env(v.base(fake.url)));
    if (next.code !== 0 || !next.stdout.includes("still here"))
      return {
        survived: false,
        lost,
        note: `${where}: the next turn failed (exit ${next.code}): ${next.stderr.trim().slice(-200)}`,
      };
    if (processesIn(dir).length > 0)
      return { survived: false, lost, note: `${where}: processes left: ${processesIn(dir)[0]}` };
    return { survived: true, lost };
  } finally {
    killLeftovers(dir);
    await fake.close();
    s.cleanup();
  }
}

const scenario = (name: string, fault: Fault): FaultScenario => ({
  name,
  proves: "4: vendor stalls, resets, garbage and refusals are bounded, classified, and the session continues",
  runs: 20,
  run: (i) => vendorRun(i, fault),
});

// A stalled attempt costs the idle timeout; two of them plus start-up stay well inside 20 s.
export const vendorFaults: FaultScenario[] = [
  scenario("vendor stall before headers", {
    entry: () => scenarios.stallBeforeHeaders(),
    transient: true,
    says: /no data from .* before its answer began/,
    boundMs: 20_000,
  }),
  scenario("vendor stall mid-stream", {
    entry: (r) => scenarios.stall({ afterFrames: 1 + Math.floor(r() * 3) }),
    transient: true,
    says: /no data from .* (mid-answer|before its answer began)/,
    boundMs: 20_000,
  }),
  scenario("vendor connection reset", {
    entry: (r) =>
      r() < 0.5 ? scenarios.hangup() : scenarios.resetMidStream({ afterFrames: 1 + Math.floor(r() * 3) }),
    transient: true,
    says: /model call failed: overloaded/,
    boundMs: 20_000,
  }),
  scenario("vendor garbage 200 (HTML, empty, bytes)", {
    entry: (r) => {
      const n = Math.floor(r() * 3);
      return n === 0 ? scenarios.htmlOk() : n === 1 ? scenarios.emptyOk() : scenarios.garbageOk();
    },
    transient: false,
    says: /invalid response/,
    boundMs: 15_000,
  }),
  scenario("vendor connection refused", {
    transient: false,
    says: /cannot reach http:\/\/127\.0\.0\.1:\d+ \(connection refused\)/,
    boundMs: 10_000,
  }),
];
