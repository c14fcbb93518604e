// The built-in zero-config profile names model ids; each must be one the chosen
// first-party provider actually serves from its built-in catalog, or a user with only a
// vendor key would get a profile that fails on its first turn.
import { chooseVendor } from "@pluggableharness/config";
import { adapter as anthropic } from "@pluggableharness/provider-anthropic";
import { adapter as google } from "@pluggableharness/provider-google";
import { adapter as openai } from "@pluggableharness/provider-openai";
import { adapter as xai } from "@pluggableharness/provider-xai";
import { describe, expect, it } from "vitest";

const catalogs: Record<string, readonly { id: string }[]> = {
  anthropic: anthropic.builtins,
  google: google.builtins,
  openai: openai.builtins,
  xai: xai.builtins,
};

describe("zero-config model choices", () => {
  it.each([
    ["anthropic", { ANTHROPIC_API_KEY: "k" }],
    ["openai", { OPENAI_API_KEY: "k" }],
    ["google", { GEMINI_API_KEY: "k" }],
    ["xai", { XAI_API_KEY: "k" }],
  ])("%s: primary and fallbacks are in the provider's catalog", (provider, env) => {
    const choice = chooseVendor(env);
    expect(choice?.provider).toBe(provider);
    const served = new Set(catalogs[provider]!.map((m) => m.id));
    for (const id of [choice!.primary, ...choice!.fallbacks]) expect(served, id).toContain(id);
  });

  it("passes the model id to an OpenAI-compatible server from OPENAI_MODEL", () => {
    const choice = chooseVendor({ OPENAI_BASE_URL: "http://127.0.0.1:1/v1", OPENAI_MODEL: "llama3.3" });
    expect(choice?.provider).toBe("openai-compatible");
    expect(choice?.plain).toMatchObject({ base_url: "OPENAI_BASE_URL", model: "OPENAI_MODEL" });
  });
});
