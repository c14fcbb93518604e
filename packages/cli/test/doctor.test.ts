// `agent doctor`: reports the sandbox, the protected paths, the names (never the values)
// bash will not see, and the policy layers; fails on a configuration that does not load.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../runtime/src/sandbox.ts";
import { runDoctor } from "../src/commands/doctor.ts";

const CANARY = "sk-doctor-canary-91c3e5";

function capture(cwd: string, env: NodeJS.ProcessEnv) {
  let out = "";
  const sink = new Writable({
    write(chunk, _e, cb) {
      out += String(chunk);
      cb();
    },
  });
  return { io: { out: sink, err: sink, env, cwd }, text: () => out };
}

describe("agent doctor", () => {
  it("reports what bash will not see by name only, and the paths no tool may write", () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "best_effort"\n}\n');
    const env = { HOME: dir, PATH: "/usr/bin:/bin", SERVICE_TOKEN: CANARY, EDITOR: "vi" };
    const c = capture(dir, env);
    expect(runDoctor(c.io, { json: true })).toBe(0);
    const report = JSON.parse(c.text());
    expect(report.sandbox.available).toBe(probeSandbox().ok);
    expect(report.sandbox.plugin_mode).toBe("best_effort");
    expect(report.bash_environment.withheld).toEqual(["SERVICE_TOKEN"]);
    expect(report.protected_paths).toContain(join(dir, "agent.hcl"));
    expect(report.protected_paths).toContain(join(dir, ".agent"));
    expect(report.policy.builtin_rules).toContain("builtin:critical_commands (deny)");
    expect(c.text()).not.toContain(CANARY);
    const plain = capture(dir, env);
    runDoctor(plain.io, {});
    expect(plain.text()).toMatch(/withheld: SERVICE_TOKEN/);
    expect(plain.text()).not.toContain(CANARY);
  });

  it.skipIf(!probeSandbox().ok)(
    "measures from inside what each sandbox holds: no capability, no privilege",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "doctor-"));
      writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "required"\n}\n');
      const c = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
      expect(runDoctor(c.io, { json: true }), c.text()).toBe(0);
      const { privileges } = JSON.parse(c.text()).sandbox;
      expect(privileges.command.holds).toEqual({
        capEff: "0000000000000000",
        capBnd: "0000000000000000",
        noNewPrivs: "1",
        seccomp: "2",
        userns: "refused",
        remount: "refused",
      });
      expect(privileges.plugin.holds).toMatchObject({
        capEff: "0000000000000000",
        capBnd: "0000000000000000",
      });
      expect([...privileges.command.shortfalls, ...privileges.plugin.shortfalls]).toEqual([]);
      const plain = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
      expect(runDoctor(plain.io, {})).toBe(0);
      expect(plain.text()).toMatch(
        /ok {4}command {3}capabilities 0+\/0+ .*seccomp mode 2, new user namespace refused/,
      );
    },
  );

  it("fails with file:line:col on a configuration that does not load", () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "sometimes"\n}\n');
    const c = capture(dir, { HOME: dir });
    expect(runDoctor(c.io, {})).toBe(1);
    expect(c.text()).toMatch(/agent\.hcl:2:\d+/);
  });
});
