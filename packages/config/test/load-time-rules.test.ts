// Rules the model-provider pages put on agent.hcl loading: env() takes a quoted literal,
// checked on the syntax before anything is evaluated, and a hook block may only name a
// point its provider advertises in supported_hook_points.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { HookPoint } from "@pluggableharness/protocol/common";
import { ModelSpecSchema, SamplingParameter } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { decodeProviderConfig, loadConfigSource, validateAgainstProviders } from "../src/index.ts";
import { VENDOR_SCHEMA } from "./helpers.ts";

const RP = `required_providers {
  anthropic = {
    source  = "github.com/pluggableharness/provider-anthropic"
    version = ">= 0.1"
  }
}
`;

function load(text: string) {
  const r = loadConfigSource(`${RP}${text}`, "agent.hcl", "/project");
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.summary).join("; "));
  return r.config;
}

const errorsOf = (diags: readonly { severity: string; category: string; line: number; column: number }[]) =>
  diags.filter((d) => d.severity === "error").map((d) => [d.category, `${d.line}:${d.column}`]);

describe("env() in provider blocks", () => {
  // The variable a bare identifier would name is set, so only the syntax can reject it.
  const env = { key_name: "sk-would-be-found", url_var: "http://example.test", KEY: "sk-real" };

  it("env() with a bare identifier instead of a quoted name is rejected, whatever the environment holds", () => {
    const config = load('provider "anthropic" {\n  api_key = env(key_name)\n}\n');
    const r = decodeProviderConfig(config, "anthropic", VENDOR_SCHEMA, env);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(errorsOf(r.diagnostics)).toEqual([["secret_literal", "8:13"]]);
    expect(JSON.stringify(r.diagnostics)).not.toContain("sk-would-be-found");
    // The same holds for an attribute that is not a secret.
    const plain = load('provider "anthropic" {\n  api_key  = env("KEY")\n  base_url = env(url_var)\n}\n');
    const p = decodeProviderConfig(plain, "anthropic", VENDOR_SCHEMA, env);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(errorsOf(p.diagnostics)).toEqual([["unsupported_expression", "9:18"]]);
  });

  it("env() is syntax-checked before evaluation; an unset variable is a separate evaluation error", () => {
    const config = load('provider "anthropic" {\n  api_key = env("NOT_SET_ANYWHERE")\n}\n');
    const unset = decodeProviderConfig(config, "anthropic", VENDOR_SCHEMA, env);
    expect(unset.ok).toBe(false);
    if (!unset.ok) expect(errorsOf(unset.diagnostics)).toEqual([["env_unset", "8:17"]]);
    const set = decodeProviderConfig(config, "anthropic", VENDOR_SCHEMA, { NOT_SET_ANYWHERE: "sk-now-set" });
    expect(set.ok).toBe(true);
    if (set.ok) expect(set.config.values["api_key"]).toBe("sk-now-set");
  });
});

describe("hook blocks", () => {
  const config = load('hook "pre-model-call" {\n  provider = "anthropic"\n  mode     = "observe"\n}\n');

  it("a hook block naming a point absent from the provider's supported_hook_points is rejected at load", () => {
    const diags = validateAgainstProviders(config, {
      anthropic: { models: ["m"], hookPoints: [HookPoint.POST_MODEL_RESPONSE] },
    });
    expect(errorsOf(diags)).toEqual([["hook_point", "7:1"]]);
    const none = validateAgainstProviders(config, { anthropic: { models: ["m"] } });
    expect(errorsOf(none)).toEqual([["hook_point", "7:1"]]);
    // Advertised, the same block loads.
    expect(
      validateAgainstProviders(config, {
        anthropic: { models: ["m"], hookPoints: [HookPoint.PRE_MODEL_CALL] },
      }),
    ).toEqual([]);
  });
});

describe("sampling parameters a profile sets for a model that refuses them", () => {
  const spec = (id: string, sampling?: MessageInitShape<typeof ModelSpecSchema>["sampling"]) =>
    create(ModelSpecSchema, {
      id,
      thinking: { supported: true, effort: { levels: ["none", "high"], default: "high" } },
      ...(sampling ? { sampling } : {}),
    });
  const specs = [
    spec("claude-sonnet-5", { accepted: [] }),
    spec("claude-sonnet-4-6", { accepted: [SamplingParameter.TEMPERATURE, SamplingParameter.TOP_K] }),
    spec("gpt-5.6-sol", { accepted: [SamplingParameter.TEMPERATURE], onlyAtEffort: ["none"] }),
    spec("undeclared"),
  ];
  const facts = { anthropic: { models: specs.map((s) => s.id), specs } };
  const profile = (strict: boolean) =>
    load(`agent_profile "default" {
  model {
    primary {
      provider    = "anthropic"
      id          = "claude-sonnet-5"
      temperature = 0.2
      top_p       = 0.9
    }
    fallback {
      provider    = "anthropic"
      id          = "claude-sonnet-4-6"
      temperature = 0.2
      top_k       = 40
    }
    fallback {
      provider        = "anthropic"
      id              = "gpt-5.6-sol"
      temperature     = 0.2
    }
    fallback {
      provider        = "anthropic"
      id              = "gpt-5.6-sol"
      thinking_effort = "none"
      temperature     = 0.2
    }
    fallback {
      provider    = "anthropic"
      id          = "undeclared"
      temperature = 0.2
    }
  }
}
${strict ? "settings {\n  strict_params = true\n}\n" : ""}`);
  const where = (d: { severity: string; category: string; line: number; column: number }) => [
    d.severity,
    d.category,
    `${d.line}:${d.column}`,
  ];

  it("is a load-time warning at the attribute, naming the model and why, and nothing else is flagged", () => {
    const diags = validateAgainstProviders(profile(false), facts).filter(
      (d) => d.category === "unsupported_parameter",
    );
    expect(diags.map(where)).toEqual([
      ["warning", "unsupported_parameter", "12:21"],
      ["warning", "unsupported_parameter", "13:21"],
      ["warning", "unsupported_parameter", "24:25"],
    ]);
    expect(diags[0]!.detail).toBe(
      'agent_profile "default" sets temperature for "anthropic/claude-sonnet-5", but claude-sonnet-5 does not accept temperature; it will not be sent (set settings.strict_params = true to make this an error).',
    );
    expect(diags[2]!.detail).toContain(
      'gpt-5.6-sol accepts temperature only at thinking effort "none", not "high"',
    );
  });

  it("is an error in strict mode", () => {
    const diags = validateAgainstProviders(profile(true), facts).filter(
      (d) => d.category === "unsupported_parameter",
    );
    expect(diags.map((d) => d.severity)).toEqual(["error", "error", "error"]);
    expect(diags[0]!.detail).toContain("settings.strict_params is on");
  });
});
