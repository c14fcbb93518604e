// A cached older build loaded for replay runs with the declared provider's settings (its
// provider block, its network grant), under its own name; agent.hcl's entries stay as they were.
import { loadConfigSource } from "@pluggableharness/config";
import { describe, expect, it } from "vitest";
import { withReplayBuilds } from "../../src/plugins/replay-builds.ts";

const HCL = `required_providers {
  stamp = {
    source  = "github.com/acme/provider-stamp"
    version = "0.2.0"
    network = true
  }
}

provider "stamp" {
  greeting = "hi"
}
`;

const build = (source: string, version: string) => ({
  localName: `${source.split("/").at(-1)}@${version}`,
  source,
  version,
  executable: "/cache/x",
  origin: "forge" as const,
});

describe("withReplayBuilds", () => {
  const loaded = loadConfigSource(HCL, "/p/agent.hcl", "/p");
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const config = loaded.config;

  it("declares the build like the provider of the same source, with a copy of its block", () => {
    const out = withReplayBuilds(config, [build("github.com/acme/provider-stamp", "0.1.0")]);
    const added = out.requiredProviders.find((r) => r.localName === "provider-stamp@0.1.0");
    expect(added).toMatchObject({
      source: "github.com/acme/provider-stamp",
      version: "0.1.0",
      network: true,
    });
    const block = out.providers.find((p) => p.name === "provider-stamp@0.1.0");
    expect(block?.body).toBe(config.providers[0]!.body);
    // agent.hcl's own entries are untouched.
    expect(config.requiredProviders).toHaveLength(1);
    expect(out.requiredProviders.find((r) => r.localName === "stamp")?.version).toBe("0.2.0");
  });

  it("declares a build whose source agent.hcl no longer names, without settings", () => {
    const out = withReplayBuilds(config, [build("github.com/acme/provider-gone", "1.0.0")]);
    const added = out.requiredProviders.find((r) => r.localName === "provider-gone@1.0.0");
    expect(added).toMatchObject({ source: "github.com/acme/provider-gone", version: "1.0.0" });
    expect(added?.network).toBeUndefined();
    expect(out.providers.map((p) => p.name)).toEqual(["stamp"]);
  });

  it("returns the configuration itself when there is nothing to add", () => {
    expect(withReplayBuilds(config, [])).toBe(config);
  });
});
