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

  it("lists the repository's git metadata as protected, and says so when the operator opens it", () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    writeFileSync(join(dir, "agent.hcl"), "");
    const c = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
    expect(runDoctor(c.io, { json: true })).toBe(0);
    const report = JSON.parse(c.text());
    expect(report.git_metadata).toMatchObject({
      setting: "settings.allow_git_metadata_writes",
      writable: false,
    });
    expect(report.protected_paths).toContain(join(dir, ".git", "hooks"));
    const plain = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
    runDoctor(plain.io, {});
    expect(plain.text()).toMatch(
      /git metadata: read-only for tools and bash \(settings\.allow_git_metadata_writes = false\)/,
    );
    expect(plain.text()).toContain(join(dir, ".git", "config"));
    writeFileSync(join(dir, "agent.hcl"), "settings {\n  allow_git_metadata_writes = true\n}\n");
    const open = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
    runDoctor(open.io, {});
    expect(open.text()).toMatch(/warn {2}git metadata: writable by tools and bash/);
    expect(open.text()).not.toContain(join(dir, ".git", "config"));
  });

  it("fails with file:line:col on a configuration that does not load", () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "sometimes"\n}\n');
    const c = capture(dir, { HOME: dir });
    expect(runDoctor(c.io, {})).toBe(1);
    expect(c.text()).toMatch(/agent\.hcl:2:\d+/);
  });
});
