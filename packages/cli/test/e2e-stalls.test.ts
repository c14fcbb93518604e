// Bounded stalls with the real binary and every first-party model provider: a vendor that
// goes silent before its headers or mid-stream is cut by settings.stream_idle_timeout_ms
// and the request is retried; --max-wall-clock ends a stalled run and never waits out a
// long retry-after; a refused connection fails at once with "cannot reach <url>".
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, scenarios, startFakeVendor, unreachableUrl } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
beforeAll(() => {
  sb = sandbox();
});
afterAll(() => sb?.cleanup());

interface Vendor {
  readonly provider: string;
  readonly fake: "anthropic" | "openai-responses" | "gemini" | "xai" | "ollama";
  readonly model: string;
  readonly block: (baseUrl: string) => string;
  readonly base: (url: string) => string;
}

const KEYED = (b: string) => `  api_key  = env("VENDOR_KEY")\n  base_url = "${b}"\n`;
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
    block: (b) => `  base_url = "${b}"\n  dialect  = "ollama"\n  models   = ["local-model"]\n`,
    base: (u) => `${u}/v1`,
  },
];

function project(name: string, v: Vendor, baseUrl: string, idleMs = 1_000): string {
  const dir = sb.dir(name);
  writeFileSync(
    join(dir, "agent.hcl"),
    `required_providers {
  ${v.provider} = {
    source  = "pluggableharness/${v.provider}"
    version = ">= 0.1.0"
  }
}

provider "${v.provider}" {
${v.block(baseUrl)}}

agent_profile "default" {
  model {
    primary {
      provider = "${v.provider}"
      id       = "${v.model}"
    }
  }
}

settings {
  stream_idle_timeout_ms = ${idleMs}
  retry {
    base_delay_ms  = 50
    backoff_factor = 2
    max_retries    = 3
  }
}
`,
  );
  return dir;
}

const env = () => ({ ...sb.env, VENDOR_KEY: "sk-stall-test", AGENT_NO_PRELAUNCH: "1" });

for (const v of VENDORS) {
  describe(`${v.provider}: a silent vendor`, () => {
    let fake: FakeVendor;
    beforeAll(async () => {
      fake = await startFakeVendor({ vendor: v.fake, script: [] });
    });
    afterAll(async () => {
      await fake?.close();
    });

    it("is cut by the idle timeout before its headers and mid-stream, and the request is retried", async () => {
      const before = fake.requests.length;
      fake.push(
        scenarios.stallBeforeHeaders(),
        scenarios.stall({ afterFrames: 1 }),
        scenarios.text("recovered"),
      );
      const dir = project(`${v.provider}-stalls`, v, v.base(fake.url));
      // --verbose: the kernel's retry warnings go to stderr only then.
      const r = await agent(["run", "-p", "hello", "--verbose"], { cwd: dir, env: env() });
      expect(r.stdout).toContain("recovered");
      expect(r.stderr.match(/model call failed: overloaded/g)).toHaveLength(2);
      expect(r.code).toBe(0);
      expect(fake.requests.length - before).toBe(3);
    });
  });
}

describe("--max-wall-clock during model waits (anthropic)", () => {
  const v = VENDORS[0]!;
  let fake: FakeVendor;
  beforeAll(async () => {
    fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  });
  afterAll(async () => {
    await fake?.close();
  });

  it("ends a stalled run when the time is up (exit 3), not after the idle timeout", async () => {
    fake.push(scenarios.stall({ afterFrames: 1 }));
    // An idle timeout far longer than the bound: the bound must end the wait.
    const dir = project("wall-stall", v, fake.url, 60_000);
    const started = Date.now();
    const r = await agent(["run", "-p", "hello", "--max-wall-clock", "2s", "--output-format", "json"], {
      cwd: dir,
      env: env(),
    });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ subtype: "error_max_wall_clock" });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("never waits out a retry-after of an hour under a 10 s bound", async () => {
    fake.push({ kind: "error", status: 429, retryAfterSeconds: 3600 });
    const dir = project("wall-retry-after", v, fake.url);
    const started = Date.now();
    const r = await agent(["run", "-p", "hello", "--max-wall-clock", "10s"], { cwd: dir, env: env() });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/asked to wait 3600 s/);
    expect(Date.now() - started).toBeLessThan(8_000);
  });
});

describe("a refused connection", () => {
  it("fails at once with cannot reach <url>, without retrying as if overloaded", async () => {
    const url = await unreachableUrl();
    const dir = project("refused", VENDORS[0]!, url);
    const started = Date.now();
    const r = await agent(["run", "-p", "hello"], { cwd: dir, env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot reach ${url} (connection refused)`);
    expect(Date.now() - started).toBeLessThan(8_000);
  });
});
