// `agent doctor`: reports the sandbox, the protected paths, the names (never the values)
// bash will not see, and the policy layers; fails on a configuration that does not load.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../runtime/src/sandbox.ts";
import { runDoctor } from "../src/commands/doctor.ts";
import { agent } from "./helpers.ts";

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

  it.skipIf(!probeSandbox().ok && !process.env["CI"])(
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
      // A tool plugin that runs no commands holds as little as a command.
      expect(privileges.plugin.holds).toEqual(privileges.command.holds);
      expect([...privileges.command.shortfalls, ...privileges.plugin.shortfalls]).toEqual([]);
      const plain = capture(dir, { HOME: dir, PATH: "/usr/bin:/bin" });
      expect(runDoctor(plain.io, {})).toBe(0);
      expect(plain.text()).toMatch(
        /ok {4}command {3}capabilities 0+\/0+ .*seccomp mode 2, new user namespace refused/,
      );
    },
  );

  // A bwrap that ignores the hardening flags stands for one that silently lacks them:
  // the probe's trial still succeeds, so only the measurement from inside can tell.
  it.skipIf(!probeSandbox().ok && !process.env["CI"])(
    "fails (exit 1) when a sandbox holds more than the default promises",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "doctor-weak-"));
      try {
        const bin = join(dir, "bin");
        mkdirSync(bin);
        const real = (probeSandbox() as { bwrap: string }).bwrap;
        writeFileSync(
          join(bin, "bwrap"),
          [
            "#!/bin/sh",
            "skip=0",
            'for a in "$@"; do',
            "  shift",
            '  if [ "$skip" = 1 ]; then skip=0; continue; fi',
            '  case "$a" in',
            "    --unshare-user|--disable-userns) continue ;;",
            "    --cap-drop|--seccomp) skip=1; continue ;;",
            "  esac",
            '  set -- "$@" "$a"',
            "done",
            `exec ${real} "$@"`,
            "",
          ].join("\n"),
        );
        chmodSync(join(bin, "bwrap"), 0o755);
        writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "required"\n}\n');
        const env = { HOME: dir, PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin` };
        const r = await agent(["doctor", "--json"], { cwd: dir, env, timeoutMs: 60_000 });
        expect(r.code, r.stdout + r.stderr).toBe(1);
        const report = JSON.parse(r.stdout);
        expect(report.sandbox.bwrap).toBe(join(bin, "bwrap"));
        const problems = (report.problems as string[]).join("\n");
        expect(problems).toMatch(/the command sandbox holds more than it should/);
        // As root the capabilities come back; as anyone, the filter is gone.
        if (process.getuid?.() === 0) expect(problems).toMatch(/effective capabilities 0*[1-9a-f]/);
        expect(problems).toMatch(/no system-call filter \(seccomp mode 0\)/);
        const plain = await agent(["doctor"], { cwd: dir, env, timeoutMs: 60_000 });
        expect(plain.code).toBe(1);
        expect(plain.stdout).toMatch(/error +the command sandbox holds more than it should/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it("fails with file:line:col on a configuration that does not load", () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    writeFileSync(join(dir, "agent.hcl"), 'settings {\n  sandbox = "sometimes"\n}\n');
    const c = capture(dir, { HOME: dir });
    expect(runDoctor(c.io, {})).toBe(1);
    expect(c.text()).toMatch(/agent\.hcl:2:\d+/);
  });
});
