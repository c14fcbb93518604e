// `agent doctor`: what this machine and project give the agent's safety features, in a
// few lines — whether the bubblewrap sandbox works here (and if not, why, and what that
// means under the configured sandbox mode), what the sandboxes actually hold (measured
// from inside: capabilities, no_new_privs, seccomp, whether a user namespace or a
// remount can be made), the kernel-owned paths no tool may write, which environment
// variables bash commands will not see (names only), and the policy layers in force.
// Exit 1 when the configuration requires a sandbox this machine cannot provide, when a
// sandbox holds more than the default promises, or the configuration does not load.
import {
  builtinDefaultRules,
  builtinDenyRules,
  envNamesReadByConfig,
  execEnvironment,
  formatDiagnostic,
  gitMetadataPaths,
  kernelProtectedPaths,
  loadAlwaysRules,
  loadProjectConfig,
} from "@pluggableharness/config";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import {
  type Measured,
  type Measurement,
  measureSandboxes,
  shortfalls,
} from "@pluggableharness/runtime/sandbox-check";
import { EXIT } from "../exit-codes.ts";
import { cliVersion, installationRoot } from "../inspect.ts";
import { type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";

export interface DoctorOptions {
  dir?: string;
  json?: boolean;
}

/** What one sandbox holds, as the report gives it. */
interface Privileges {
  how: string;
  holds: Measured | undefined;
  shortfalls: string[];
}

export function runDoctor(io: Io, opts: DoctorOptions): number {
  const dir = projectOf(io, opts.dir).dir;
  const loaded = loadProjectConfig(dir, { env: io.env });
  const probe = probeSandbox();
  const mode = loaded.ok ? loaded.config.settings.sandbox : "best_effort";
  const gitWritable = loaded.ok && loaded.config.settings.allow_git_metadata_writes;
  const protectedPaths = kernelProtectedPaths(dir, io.env, { gitMetadata: false });
  const gitPaths = gitMetadataPaths(dir);
  const env = execEnvironment(io.env, {
    configNames: envNamesReadByConfig(dir, io.env),
    installationRoot: installationRoot(),
    execPath: process.execPath,
  });
  const always = loadAlwaysRules(dir);
  const problems: string[] = [];
  if (!loaded.ok) problems.push(...loaded.diagnostics.map(formatDiagnostic));
  if (!probe.ok && mode === "required") {
    problems.push(`settings.sandbox = "required", but the sandbox cannot run here: ${probe.reason}`);
  }
  // Measured from inside, whatever the mode: the exec block has its own sandbox setting.
  const measured = measureSandboxes();
  // A tool plugin that runs no commands is held to the same promise as a command.
  const judge = (m: Measurement, kind: "command" | "plugin"): Privileges => {
    const extra = m.ok ? shortfalls(m.measured, "command") : [`the check could not run (${m.error})`];
    for (const e of extra) problems.push(`the ${kind} sandbox holds more than it should (${m.how}): ${e}`);
    return { how: m.how, holds: m.ok ? m.measured : undefined, shortfalls: extra };
  };
  const privileges = measured
    ? { command: judge(measured.command, "command"), plugin: judge(measured.plugin, "plugin") }
    : undefined;
  const report = {
    agent: { version: cliVersion(), installation: installationRoot() },
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    sandbox: {
      available: probe.ok,
      ...(probe.ok
        ? { bwrap: probe.bwrap, hardening: probe.hardening, degraded: probe.weaker }
        : { reason: probe.reason }),
      ...(privileges ? { privileges } : {}),
      plugin_mode: mode,
      effect: !probe.ok
        ? mode === "required"
          ? "tool plugins and bash commands are refused"
          : mode === "off"
            ? "nothing is sandboxed (off)"
            : "tool plugins and bash commands run unconfined (best_effort), with a warning"
        : mode === "off"
          ? "tool plugins run unconfined (off); bash follows the exec provider's own sandbox setting"
          : "tool plugins and bash commands run in bubblewrap",
    },
    protected_paths: gitWritable ? protectedPaths : [...protectedPaths, ...gitPaths],
    git_metadata: {
      setting: "settings.allow_git_metadata_writes",
      writable: gitWritable,
      paths: gitPaths,
    },
    bash_environment: { passed: Object.keys(env.variables).length, withheld: env.withheld },
    policy: {
      operator_rules: loaded.ok ? loaded.config.policies.length : 0,
      always_rules: always.ok ? always.rules.length : "unreadable",
      builtin_rules: [...builtinDenyRules(), ...builtinDefaultRules()].map((r) => `${r.name} (${r.action})`),
    },
    problems,
  };
  if (opts.json) {
    line(io.out, JSON.stringify(report, null, 2));
    return problems.length > 0 ? EXIT.ERROR : EXIT.OK;
  }
  const ok = (b: boolean) => (b ? "ok  " : "warn");
  line(io.out, `agent doctor — ${dir}`);
  line(io.out, `  agent     ${report.agent.version} (${report.agent.installation})`);
  line(io.out, `  node      ${report.node} (${report.platform})`);
  line(
    io.out,
    `  ${ok(probe.ok)}  sandbox   ${probe.ok ? `bubblewrap works (${probe.bwrap})` : `unavailable: ${probe.reason}`}`,
  );
  line(io.out, `            mode ${mode}: ${report.sandbox.effect}`);
  if (probe.ok) for (const w of probe.weaker) line(io.out, `  warn  sandbox   degraded: ${w}`);
  for (const [kind, p] of Object.entries(privileges ?? {})) {
    const h = p.holds;
    const held = h
      ? `capabilities ${h.capEff}/${h.capBnd} (effective/bounding), no_new_privs ${h.noNewPrivs}, ` +
        `seccomp mode ${h.seccomp}, new user namespace ${h.userns}, remount of / ${h.remount}`
      : `not measured: ${p.shortfalls.join("; ")}`;
    line(io.out, `  ${ok(p.shortfalls.length === 0)}  ${kind.padEnd(8)}  ${held}`);
    line(io.out, `            ${p.how}`);
  }
  line(io.out, "  ok    protected (no tool may write):");
  for (const p of protectedPaths) line(io.out, `            ${p}`);
  line(
    io.out,
    gitWritable
      ? "  warn  git metadata: writable by tools and bash (settings.allow_git_metadata_writes = true)"
      : "  ok    git metadata: read-only for tools and bash (settings.allow_git_metadata_writes = false):",
  );
  if (!gitWritable) for (const p of gitPaths) line(io.out, `            ${p}`);
  line(
    io.out,
    `  ok    bash environment: ${report.bash_environment.passed} variables passed, ${env.withheld.length} withheld${env.withheld.length > 0 ? `: ${env.withheld.join(", ")}` : ""}`,
  );
  line(
    io.out,
    `  ok    policy: ${report.policy.operator_rules} operator rules, ${report.policy.always_rules} ALWAYS rules (.agent/policy.auto.hcl), built-in: ${report.policy.builtin_rules.join(", ")}`,
  );
  for (const p of problems) line(io.out, `  error ${p}`);
  return problems.length > 0 ? EXIT.ERROR : EXIT.OK;
}
