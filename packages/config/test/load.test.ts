// Project loading: file discovery, settings defaults, hooks, profiles, the
// built-in default configuration, the global config, the ALWAYS store and the
// second validation pass.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  BUILTIN_CONFIG_FILE,
  chooseVendor,
  DEFAULT_OBSERVABILITY,
  DEFAULT_RETRY,
  decodeProviderConfig,
  defaultConfig,
  defaultConfigSource,
  devOverridePaths,
  getProfile,
  globalConfigPath,
  loadAlwaysRules,
  loadConfigSource,
  loadGlobalConfig,
  loadProjectConfig,
  loadProjectConfigOrThrow,
  mirrorFor,
  POLICY_STORE_FILE,
  PolicyEngine,
  PolicyStoreError,
  parseToolPattern,
  recordAlwaysDecision,
  resolveProfileTools,
  resolveProviders,
  validateAgainstProviders,
} from "../src/index.ts";
import { CANARY, FACTS, INSTALL_ROOT } from "./helpers.ts";

const tmp = mkdtempSync(join(tmpdir(), "ph-config-load-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
function projectDir(files: Record<string, string>): string {
  const dir = join(tmp, `p${n++}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const RP = `required_providers {
  filesystem = {
    source  = "pluggableharness/filesystem"
    version = "~> 0.3"
  }
  audit = {
    source  = "github.com/acme/provider-audit"
    version = ">= 1.0"
  }
}
`;

describe("project loading", () => {
  it("reads only agent.hcl and reports sibling *.hcl files as ignored", () => {
    const dir = projectDir({ "agent.hcl": RP, "extra.hcl": "policy {", "notes.txt": "" });
    const r = loadProjectConfig(dir, { env: {} });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.origin).toBe("file");
    expect(r.warnings.map((w) => [w.category, w.file])).toEqual([["ignored_file", join(dir, "extra.hcl")]]);
  });

  it("applies settings defaults when settings is absent", () => {
    const c = loadProjectConfigOrThrow(projectDir({ "agent.hcl": RP }));
    expect(c.settings.retry).toEqual(DEFAULT_RETRY);
    expect(c.settings.observability).toEqual(DEFAULT_OBSERVABILITY);
    expect(c.settings).toMatchObject({
      log_level: "info",
      telemetry: false,
      observability_declared: false,
      default_hook_timeout_ms: 5000,
      default_tool_timeout_ms: 120000,
      stream_idle_timeout_ms: 300000,
      max_retry_delay_ms: 60000,
      max_model_wait_ms: 600000,
      default_max_depth: 2,
      doom_loop_threshold: 3,
      doom_loop_window: 10,
    });
  });

  it("reads max_model_wait_ms and refuses a value below 1 ms", () => {
    const ok = loadConfigSource("settings {\n  max_model_wait_ms = 90000\n}\n", "agent.hcl", "/p");
    expect(ok.ok && ok.config.settings.max_model_wait_ms).toBe(90000);
    const bad = loadConfigSource("settings {\n  max_model_wait_ms = 0\n}\n", "agent.hcl", "/p");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.diagnostics.map((d) => d.detail).join("\n")).toMatch(/max_model_wait_ms/);
  });

  it("reads max_retry_delay_ms and refuses a value below 1 ms", () => {
    const ok = loadConfigSource("settings {\n  max_retry_delay_ms = 2500\n}\n", "agent.hcl", "/p");
    expect(ok.ok && ok.config.settings.max_retry_delay_ms).toBe(2500);
    const bad = loadConfigSource("settings {\n  max_retry_delay_ms = 0\n}\n", "agent.hcl", "/p");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.diagnostics.map((d) => d.detail).join("\n")).toMatch(/max_retry_delay_ms/);
  });

  it("treats a written observability block as telemetry intent unless telemetry = false", () => {
    const obs = `  observability {
    endpoint           = "collector:4318"
    protocol           = "http"
    sampling_ratio     = 0.25
    traces_enabled     = false
    metrics_enabled    = true
    logs_enabled       = true
    export_interval_ms = 5000
    service_name       = "svc"
  }
`;
    const on = loadConfigSource(`settings {\n${obs}}\n`, "agent.hcl", "/p");
    expect(on.ok && on.config.settings.telemetry).toBe(true);
    expect(on.ok && on.config.settings.observability).toMatchObject({
      protocol: "http",
      sampling_ratio: 0.25,
      resource_attrs: {},
    });
    const off = loadConfigSource(`settings {\n  telemetry = false\n${obs}}\n`, "agent.hcl", "/p");
    expect(off.ok && off.config.settings.telemetry).toBe(false);
    expect(off.ok && off.config.settings.retry).toEqual(DEFAULT_RETRY);
  });

  it("decodes hooks with declaration order shared with provider blocks", () => {
    const r = loadConfigSource(
      `${RP}
provider "filesystem" {}

hook "post-tool-call" {
  provider   = "audit"
  mode       = "observe"
  timeout_ms = 250
}

hook "plan-ready" {
  provider = "audit"
  mode     = "veto"
}

hook "pre-tool-call" {
  provider = "filesystem"
  mode     = "veto"
}
`,
      "agent.hcl",
      "/p",
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.hooks.map((h) => [h.point, h.provider, h.mode, h.timeout_ms, h.order])).toEqual([
      ["post-tool-call", "audit", "observe", 250, 2],
      ["plan-ready", "audit", "veto", undefined, 3],
      ["pre-tool-call", "filesystem", "veto", undefined, 4],
    ]);
    expect(r.config.providers[0]!.order).toBe(1);
  });

  it("collects diagnostics from every block in one pass", () => {
    const r = loadConfigSource(
      `${RP}
bogus {}
policy "p" {
  match  = { kind = "interactive" }
  action = "deny"
}
agent_profile "x" {
  tools = ["filesystem"]
}
hook "nope" {
  provider = "audit"
  mode     = "observe"
}
`,
      "agent.hcl",
      "/p",
    );
    expect(!r.ok && r.diagnostics.map((d) => d.category)).toEqual([
      "unknown_block",
      "invalid_value",
      "tool_pattern",
      "hook_point",
    ]);
  });

  it("warns (and loads) when a policy has an empty match", () => {
    const r = loadConfigSource(
      'policy "everything" {\n  match  = {}\n  action = "ask"\n}\n',
      "agent.hcl",
      "/p",
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.warnings.map((w) => [w.severity, w.category, w.line, w.column])).toEqual([
      ["warning", "policy_empty_match", 2, 12],
    ]);
    expect(
      new PolicyEngine(r.config.policies).evaluate({ kind: "data_source", provider: "x", tool_name: "y" }),
    ).toMatchObject({
      decision: "deny",
      downgraded: true,
    });
  });

  it("parses tool patterns", () => {
    expect(parseToolPattern("filesystem.read_file")).toEqual({ provider: "filesystem", tool: "read_file" });
    expect(parseToolPattern("fs.*")).toEqual({ provider: "fs", tool: "*" });
    expect("error" in parseToolPattern("fs")).toBe(true);
    expect("error" in parseToolPattern("fs.a.b")).toBe(true);
  });

  it("decodes generation parameters of model candidates", () => {
    const r = loadConfigSource(
      `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0"
  }
}
agent_profile "default" {
  model {
    primary {
      provider               = "anthropic"
      id                     = "claude-opus-4-8"
      thinking_effort        = "high"
      max_output_tokens      = 32000
    }
    fallback {
      provider               = "anthropic"
      id                     = "claude-sonnet-4-6"
      thinking_budget_tokens = 8000
      temperature            = 0.2
      stop_sequences         = ["END"]
    }
  }
}
`,
      "agent.hcl",
      "/p",
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const m = r.config.profiles[0]!.model!;
    expect(m.primary.params).toEqual({ thinking_effort: "high", max_output_tokens: 32000 });
    expect(m.fallbacks[0]!.params).toEqual({
      thinking_budget_tokens: 8000,
      temperature: 0.2,
      stop_sequences: ["END"],
    });
  });

  it("keeps a candidate's provider_options as written and refuses env() and non-objects there", () => {
    const source = (primaryExtra: string, fallbackExtra = "") => `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0"
  }
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-opus-4-8"
${primaryExtra}
    }
    fallback {
      provider = "anthropic"
      id       = "claude-sonnet-4-6"
${fallbackExtra}
    }
  }
}
`;
    const ok = loadConfigSource(
      source(
        `      provider_options = {
        service_tier   = "priority"
        top_k          = 5
        anthropic_beta = ["b1", "b2"]
        nested         = { on = true, off = null }
      }`,
      ),
      "agent.hcl",
      "/p",
    );
    expect(ok.ok).toBe(true);
    if (!ok.ok) return;
    const m = ok.config.profiles[0]!.model!;
    expect(m.primary.provider_options).toStrictEqual({
      service_tier: "priority",
      top_k: 5,
      anthropic_beta: ["b1", "b2"],
      nested: { on: true, off: null },
    });
    // Not written: absent, not an empty object.
    expect(m.fallbacks[0]!).not.toHaveProperty("provider_options");

    const env = loadConfigSource(
      source("", '      provider_options = { user = env("HOME") }'),
      "agent.hcl",
      "/p",
    );
    if (env.ok) throw new Error("env() in provider_options was accepted");
    const envErr = env.diagnostics.find((d) => d.severity === "error")!;
    expect(envErr).toMatchObject({ category: "unsupported_expression", line: 17 });
    expect(envErr.detail).toContain("model.fallback[0].provider_options takes plain values only");

    const notObject = loadConfigSource(source('      provider_options = "seed=7"'), "agent.hcl", "/p");
    if (notObject.ok) throw new Error("a string provider_options was accepted");
    expect(notObject.diagnostics.find((d) => d.severity === "error")).toMatchObject({
      category: "type",
      line: 12,
    });
  });
});

describe("built-in default configuration", () => {
  it("is used when there is no agent.hcl, with the vendor found in the environment", () => {
    const dir = projectDir({});
    const r = loadProjectConfig(dir, { env: { ANTHROPIC_API_KEY: CANARY } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.config;
    expect(c.origin).toBe("builtin");
    expect(c.file).toBe(BUILTIN_CONFIG_FILE);
    expect(c.requiredProviders.map((p) => p.localName)).toEqual([
      "anthropic",
      "filesystem",
      "search",
      "exec",
      "web",
      "user",
      "task",
      "commands",
      "agent",
      "project-context",
      "workspace-context",
      "memory",
      "widgets",
      "compactor",
      "tui",
    ]);
    const profile = getProfile(c)!;
    expect(profile.declared).toBe(true);
    expect(profile.model?.primary).toMatchObject({ provider: "anthropic", id: "claude-sonnet-5" });
    expect(profile.tools.map((t) => t.text)).toEqual([
      "filesystem.*",
      "search.*",
      "exec.*",
      "web.*",
      "user.*",
      "task.*",
      "commands.*",
      "memory.*",
      "agent.*",
    ]);
    expect(profile.slash_commands).toEqual(["*"]);
    // The sub-agents' profiles; the one rule lets a spawn the kernel rates moderate run.
    expect(c.profiles.map((p) => p.name)).toEqual(["default", "explorer", "worker"]);
    expect(c.policies.map((p) => [p.name, p.match, p.action])).toEqual([
      ["allow_subagents", { provider: "agent", risk: "moderate" }, "allow"],
    ]);
    expect(
      new PolicyEngine(c.policies).evaluate({ kind: "resource", provider: "exec", tool_name: "bash" })
        .decision,
    ).toBe("ask");
    expect(JSON.stringify(c)).not.toContain(CANARY);
    // Every source resolves to the shipped first-party naming scheme.
    expect(
      c.requiredProviders.every((p) => p.source === `github.com/pluggableharness/provider-${p.localName}`),
    ).toBe(true);
  });

  it.each([
    [{ ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" }, "anthropic", "claude-sonnet-5"],
    [{ OPENAI_API_KEY: "o", GEMINI_API_KEY: "g" }, "openai", "gpt-5.6-sol"],
    [{ GOOGLE_API_KEY: "g" }, "google", "gemini-3.8-flash"],
    [{ GEMINI_API_KEY: "g", XAI_API_KEY: "x" }, "google", "gemini-3.8-flash"],
    [{ XAI_API_KEY: "x", ANTHROPIC_API_KEY: "" }, "xai", "grok-4.3"],
    [
      { OPENAI_BASE_URL: "http://localhost:11434/v1", OPENAI_MODEL: "llama3.3" },
      "openai-compatible",
      "llama3.3",
    ],
    [{ OPENAI_API_KEY: "o", OPENAI_BASE_URL: "http://h/v1", OPENAI_MODEL: "m" }, "openai-compatible", "m"],
    // A base URL without a model: a proxy of OpenAI's API, with the usual default model.
    [{ OPENAI_API_KEY: "o", OPENAI_BASE_URL: "http://h/v1" }, "openai", "gpt-5.6-sol"],
    [{ OPENAI_API_KEY: "o", OPENAI_MODEL: "gpt-5.5" }, "openai", "gpt-5.5"],
    [{ ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: "http://gw/anthropic" }, "anthropic", "claude-sonnet-5"],
  ])("picks the vendor for %j", (env, provider, id) => {
    expect(chooseVendor(env)?.provider).toBe(provider);
    const r = defaultConfig(env, "/p");
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.profiles[0]!.model?.primary).toMatchObject({ provider, id });
  });

  it("decodes the chosen vendor's credential from env()", () => {
    const env = { OPENAI_API_KEY: "o-key", OPENAI_BASE_URL: "http://h/v1", OPENAI_MODEL: "m" };
    const r = defaultConfig(env, "/p");
    if (!r.ok) throw new Error("default failed");
    const block = r.config.providers[0]!;
    expect(block.name).toBe("openai-compatible");
    const schema = {
      attributes: [
        { name: "api_key", type: 1, required: false, sensitive: true, objectAttributes: [] },
        { name: "base_url", type: 1, required: true, sensitive: false, objectAttributes: [] },
        { name: "model", type: 1, required: false, sensitive: false, objectAttributes: [] },
      ],
    };
    const d = decodeProviderConfig(r.config, "openai-compatible", schema, env);
    expect(d.ok && d.config.values).toEqual({ api_key: "o-key", base_url: "http://h/v1", model: "m" });
  });

  it.each([
    [
      { ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: "http://gw/anthropic" },
      "anthropic",
      "http://gw/anthropic",
    ],
    [{ OPENAI_API_KEY: "o", OPENAI_BASE_URL: "http://proxy/v1" }, "openai", "http://proxy/v1"],
  ])("honours the vendor's base URL variable for %j", (env, provider, url) => {
    const r = defaultConfig(env, "/p");
    if (!r.ok) throw new Error("default failed");
    const schema = {
      attributes: [
        { name: "api_key", type: 1, required: true, sensitive: true, objectAttributes: [] },
        { name: "base_url", type: 1, required: false, sensitive: false, objectAttributes: [] },
      ],
    };
    const d = decodeProviderConfig(r.config, provider, schema, env);
    expect(d.ok && d.config.values).toMatchObject({ base_url: url });
    // Without the variable, no base_url is written (the plugin's default applies).
    const key = provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    expect(defaultConfigSource({ [key]: "k" }, "/p")).not.toContain("base_url");
  });

  it("a base URL alone says OPENAI_MODEL is missing", () => {
    const r = loadProjectConfig(projectDir({}), { env: { OPENAI_BASE_URL: "http://h/v1" } });
    expect(!r.ok && r.diagnostics[0]!.detail).toMatch(/^OPENAI_BASE_URL is set but OPENAI_MODEL is not/);
  });

  it("says which variables to set when there is none", () => {
    for (const env of [{}, { OPENAI_BASE_URL: "http://h/v1" }, { ANTHROPIC_API_KEY: "" }]) {
      const r = loadProjectConfig(projectDir({}), { env });
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.diagnostics).toHaveLength(1);
      const d = r.diagnostics[0]!;
      expect(d.category).toBe("no_model_provider");
      for (const v of [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "XAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
      ]) {
        expect(d.detail).toContain(v);
      }
    }
  });

  it("falls back to a built-in root profile when agent.hcl declares no default profile", () => {
    const c = loadProjectConfigOrThrow(projectDir({ "agent.hcl": RP }));
    const p = getProfile(c)!;
    expect(p.declared).toBe(false);
    expect(p.model).toBeUndefined();
    expect(p.tools.map((t) => t.text)).toEqual(["filesystem.*", "audit.*"]);
    expect(getProfile(c, "missing")).toBeUndefined();
  });
});

describe("second validation pass", () => {
  const source = `${RP}
agent_profile "default" {
  tools = ["filesystem.read_file", "filesystem.*", "audit.*", "filesystem.write_file"]
}
hook "post-tool-call" {
  provider = "audit"
  mode     = "observe"
}
`;

  it("accepts tools, models and hook points the loaded providers advertise", () => {
    const c = loadProjectConfigOrThrow(projectDir({ "agent.hcl": source }));
    const loaded = { ...FACTS, audit: { tools: ["record"], hookPoints: ["post-tool-call" as const] } };
    expect(validateAgainstProviders(c, loaded)).toEqual([]);
    expect(resolveProfileTools(getProfile(c)!, loaded)).toEqual([
      { provider: "filesystem", tool: "read_file" },
      { provider: "filesystem", tool: "write_file" },
      { provider: "filesystem", tool: "edit_file" },
      { provider: "audit", tool: "record" },
    ]);
  });

  it("rejects a slash command two providers declare, at the later one's required_providers entry", () => {
    const dir = projectDir({ "agent.hcl": source });
    const c = loadProjectConfigOrThrow(dir);
    const loaded = {
      filesystem: { ...FACTS.filesystem, slashCommands: ["review", "read"] },
      audit: {
        tools: ["record"],
        hookPoints: ["post-tool-call" as const],
        slashCommands: ["review", "audit"],
      },
    };
    const diags = validateAgainstProviders(c, loaded);
    expect(diags.map((d) => [d.category, d.range?.start.line, d.range?.start.column])).toEqual([
      ["duplicate", 6, 3],
    ]);
    expect(diags[0]!.detail).toContain(
      `"audit" and "filesystem" (${join(dir, "agent.hcl")}:2:3) both declare the slash command /review`,
    );
    // Distinct names, or one provider declaring a name twice, are fine.
    loaded.audit.slashCommands = ["audit", "audit"];
    expect(validateAgainstProviders(c, loaded)).toEqual([]);
  });

  it("treats providers that did not load as silent no-ops", () => {
    const c = loadProjectConfigOrThrow(projectDir({ "agent.hcl": source }));
    expect(validateAgainstProviders(c, { filesystem: FACTS.filesystem })).toEqual([]);
    expect(resolveProfileTools(getProfile(c)!, { filesystem: FACTS.filesystem })).toHaveLength(3);
  });

  it("accepts wire enum hook points and warns about unknown model ids", () => {
    const c = loadConfigSource(
      `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0"
  }
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-opus-9"
    }
  }
}
hook "plan-ready" {
  provider = "anthropic"
  mode     = "observe"
}
`,
      "agent.hcl",
      "/p",
    );
    if (!c.ok) throw new Error("load failed");
    const ds = validateAgainstProviders(c.config, { anthropic: { ...FACTS.anthropic, hookPoints: [5] } });
    expect(ds.map((d) => [d.severity, d.category, d.line])).toEqual([["warning", "unknown_model", 9]]);
  });
});

describe("global config", () => {
  it("lives under XDG_CONFIG_HOME, else ~/.config", () => {
    expect(globalConfigPath({ XDG_CONFIG_HOME: "/x" })).toBe("/x/agent/config.hcl");
    expect(globalConfigPath({ HOME: "/home/u" })).toBe("/home/u/.config/agent/config.hcl");
    expect(globalConfigPath({ XDG_CONFIG_HOME: "relative", HOME: "/h" })).toBe("/h/.config/agent/config.hcl");
  });

  it("is empty when the file does not exist", () => {
    expect(loadGlobalConfig({ env: { XDG_CONFIG_HOME: join(tmp, "nowhere") } })).toEqual({
      ok: true,
      config: { devOverrides: {} },
    });
  });

  it("reads dev_overrides and picks mirrors by longest prefix", () => {
    const xdg = join(tmp, "xdg");
    mkdirSync(join(xdg, "agent"), { recursive: true });
    writeFileSync(
      join(xdg, "agent", "config.hcl"),
      `dev_overrides {
  filesystem = "/opt/dev/provider-filesystem"
  audit      = "bin/provider-audit"
}

registry_mirror {
  default = "https://registry.internal.example.com"

  mirror {
    prefix = "github.com/agentco/"
    url    = "https://registry.internal.example.com/agentco"
    auth   = env("AGENTCO_TOKEN")
  }

  mirror {
    prefix = "github.com/agentco/private-"
    url    = "https://registry.internal.example.com/private"
  }
}
`,
    );
    const r = loadGlobalConfig({ env: { XDG_CONFIG_HOME: xdg, AGENTCO_TOKEN: "tok" } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(devOverridePaths(r.config)).toEqual({
      filesystem: "/opt/dev/provider-filesystem",
      audit: join(xdg, "agent", "bin", "provider-audit"),
    });
    expect(mirrorFor(r.config, "github.com/agentco/private-x")).toEqual({
      prefix: "github.com/agentco/private-",
      url: "https://registry.internal.example.com/private",
    });
    const m = mirrorFor(r.config, "github.com/agentco/provider-x");
    expect(m?.url).toBe("https://registry.internal.example.com/agentco");
    expect(m?.auth?.reveal()).toBe("tok");
    expect(mirrorFor(r.config, "gitlab.com/x/y")).toEqual({ url: "https://registry.internal.example.com" });
  });

  it("feeds dev_overrides to provider resolution", () => {
    const c = loadProjectConfigOrThrow(projectDir({ "agent.hcl": RP }));
    const exe = join(tmp, "audit-bin");
    writeFileSync(exe, "");
    const r = resolveProviders(c, { installationRoot: INSTALL_ROOT, devOverrides: { audit: exe } });
    expect(r.diagnostics).toEqual([]);
    expect(r.providers.map((p) => p.origin)).toEqual(["first_party", "dev_override"]);
  });
});

describe("ALWAYS policy store", () => {
  it("persists verdicts as policy blocks loaded like operator rules", () => {
    const dir = projectDir({});
    expect(loadAlwaysRules(dir)).toEqual({ ok: true, rules: [] });
    const [r1] = recordAlwaysDecision(dir, {
      provider: "filesystem",
      tool_name: "write_file",
      decision: "allow",
      profile: "default",
    });
    recordAlwaysDecision(dir, { provider: "exec", tool_name: "bash", decision: "deny", profile: "default" });
    recordAlwaysDecision(dir, {
      provider: "filesystem",
      tool_name: "write_file",
      decision: "deny",
      profile: "default",
    });
    recordAlwaysDecision(dir, {
      provider: "filesystem",
      tool_name: "write_file",
      decision: "allow",
      profile: "reviewer",
    });
    const text = readFileSync(join(dir, POLICY_STORE_FILE), "utf8");
    expect(text.startsWith("# Written by the agent")).toBe(true);
    const loaded = loadAlwaysRules(dir);
    expect(loaded.ok).toBe(true);
    if (!loaded.ok) return;
    expect(loaded.rules.map((r) => [r.name, r.action, r.profile, r.origin])).toEqual([
      ["always:default:exec.bash", "deny", "default", "always"],
      ["always:default:filesystem.write_file", "deny", "default", "always"],
      ["always:reviewer:filesystem.write_file", "allow", "reviewer", "always"],
    ]);
    expect(r1!.match).toEqual({ provider: "filesystem", tool_name: "write_file" });
    const e = new PolicyEngine([], { alwaysRules: loaded.rules, profile: "reviewer" });
    expect(e.evaluate({ kind: "resource", provider: "filesystem", tool_name: "write_file" })).toMatchObject({
      decision: "allow",
      layer: "always",
    });
    // Same bytes when nothing changed.
    recordAlwaysDecision(dir, { provider: "exec", tool_name: "bash", decision: "deny", profile: "default" });
    expect(readFileSync(join(dir, POLICY_STORE_FILE), "utf8")).toBe(text);
  });

  it("rejects an unwritable store with a distinct error", () => {
    const dir = projectDir({});
    writeFileSync(join(dir, ".agent"), "a file where the directory should be");
    expect(() =>
      recordAlwaysDecision(dir, { provider: "p", tool_name: "t", decision: "allow", profile: "default" }),
    ).toThrow(PolicyStoreError);
  });

  it("refuses to extend an invalid store", () => {
    const dir = projectDir({});
    mkdirSync(join(dir, ".agent"));
    writeFileSync(join(dir, POLICY_STORE_FILE), 'policy "x" {\n  action = "maybe"\n}\n');
    const bad = loadAlwaysRules(dir);
    expect(!bad.ok && bad.diagnostics.map((d) => d.category)).toEqual(["missing_attribute", "invalid_value"]);
    expect(() =>
      recordAlwaysDecision(dir, { provider: "p", tool_name: "t", decision: "allow", profile: "d" }),
    ).toThrow(PolicyStoreError);
  });
});
