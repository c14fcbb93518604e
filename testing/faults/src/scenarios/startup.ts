// Never hang (issue 15, point 3): after one successful run (so the next prelaunches its
// plugins), a start-up error — a missing key, a truncated lock file, a broken global
// configuration, a plugin that rejects its configuration (run i injects fault i mod 4) —
// must end `agent run -p` with status 1 and the message within seconds, with nothing holding
// the process open after the command (bin.ts's exit guard never speaks), leaving no process.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeVendor } from "@pluggableharness/fake-vendors";
import type { FaultScenario } from "../scenario.ts";
import { agent, killLeftovers, processesIn, scratch, until } from "../support.ts";

const FAULTS: Array<{
  name: string;
  inject: (repo: string, env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
  says: RegExp;
}> = [
  {
    name: "missing key",
    inject: (_r, env) => {
      const e = { ...env };
      delete e["ANTHROPIC_API_KEY"];
      return e;
    },
    says: /ANTHROPIC_API_KEY/,
  },
  {
    name: "truncated lock file",
    inject: (repo, env) => {
      mkdirSync(join(repo, ".agent"), { recursive: true });
      writeFileSync(
        join(repo, ".agent", "agent.lock.hcl"),
        'lock_file_version = 1\nprovider "anthropic" {\n  ver',
      );
      return env;
    },
    says: /agent\.lock\.hcl:\d+:\d+/,
  },
  {
    name: "broken global config",
    inject: (_r, env) => {
      const dir = join(env["XDG_CONFIG_HOME"]!, "agent");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "config.hcl"), "dev_overrides {\n  anthropic = \n");
      return env;
    },
    says: /config\.hcl:\d+:\d+/,
  },
  {
    name: "plugin rejects its configuration",
    inject: (_r, env) => ({ ...env, FAKE_ANTHROPIC_URL: "ftp://127.0.0.1:1" }),
    says: /base_url/,
  },
];

export const startupErrorAfterPrelaunch: FaultScenario = {
  name: "start-up error after prelaunch",
  proves: "3: a configuration or start-up error exits 1 with the message; prelaunched processes die",
  runs: 20,
  async run(index) {
    const fault = FAULTS[index % FAULTS.length]!;
    const s = scratch();
    const fake = await startFakeVendor({
      vendor: "anthropic",
      script: [],
      whenExhausted: { kind: "text", text: "OK" },
    });
    const repo = s.repo();
    try {
      const env = {
        ...s.env,
        ANTHROPIC_API_KEY: "sk-ant-faults",
        FAKE_ANTHROPIC_URL: fake.url,
        FIXTURE_ROOT: repo,
      };
      const ok = await agent(["run", "-p", "say OK"], repo, env);
      if (ok.code !== 0)
        return { survived: false, lost: 0, note: `the priming run failed: ${ok.stderr.slice(-200)}` };
      const r = await agent(["run", "-p", "say OK"], repo, fault.inject(repo, env), 20_000);
      const clean = await until(() => processesIn(repo).length === 0, 2_000);
      if (r.code !== 1)
        return { survived: false, lost: 0, note: `${fault.name}: exit ${r.code} after ${r.ms} ms` };
      if (!fault.says.test(r.stderr))
        return { survived: false, lost: 0, note: `${fault.name}: ${r.stderr.slice(-200)}` };
      // The exit guard's message means something held the process after the command ended.
      if (r.stderr.includes("still open"))
        return { survived: false, lost: 0, note: `${fault.name}: ${r.stderr.trim()}` };
      if (r.ms > 15_000) return { survived: false, lost: 0, note: `${fault.name}: took ${r.ms} ms` };
      if (!clean) return { survived: false, lost: 0, note: `${fault.name}: left ${processesIn(repo)[0]}` };
      return { survived: true, lost: 0 };
    } finally {
      killLeftovers(repo);
      rmSync(join(s.env["XDG_CONFIG_HOME"]!, "agent"), { recursive: true, force: true });
      await fake.close();
      s.cleanup();
    }
  },
};
