// Which cached build a replay renders a producer with (replay-builds.ts), against a real
// download cache written by the registry's own store: exact identity from producers.json,
// the repository-name guess for a build the kernel never ran, another platform ignored, a
// changed build refused with the reason, and the advice for one that is gone.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { platformKey } from "@pluggableharness/config";
import { tarGz } from "@pluggableharness/fake-forge";
import { PluginCategory } from "@pluggableharness/protocol/common";
import {
  executablePath,
  providerCacheDir,
  readArchive,
  sha256,
  storeEntry,
  writeProducers,
} from "@pluggableharness/registry";
import type { ProducerRecord } from "@pluggableharness/state";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cachedBuildsFor, howToGet, originOf } from "../src/replay-builds.ts";

const SOURCE = "github.com/acme/provider-stamp";
let home: string;
let env: Record<string, string>;

function cache(version: string, platform = platformKey(), body = "#!/bin/sh\necho stamp\n") {
  const asset = tarGz([{ path: "provider-stamp", data: body, mode: "755" }]);
  const name = `provider-stamp_${version}_${platform}.tar.gz`;
  const files = readArchive(asset, "tar.gz", name, "provider-stamp");
  return storeEntry(
    providerCacheDir(env),
    {
      source: SOURCE,
      version,
      platform,
      checksum: `sha256:${sha256(asset)}`,
      asset: name,
      assetFormat: "tar.gz",
      executable: "provider-stamp",
    },
    asset,
    files,
  );
}

const wanted = (name: string, version: string, category = PluginCategory.TOOL): ProducerRecord => ({
  category,
  name,
  version,
  categoryText: "tool",
  firstSeenSequence: 3,
});

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "replay-builds-"));
  env = { HOME: home, XDG_CACHE_HOME: join(home, "cache") };
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe("cachedBuildsFor", () => {
  it("finds the build of the exact version, under a name of its own, and only that one", () => {
    const old = cache("0.1.0");
    cache("0.2.0");
    writeProducers(old.dir, [{ category: PluginCategory.TOOL, name: "provider-stamp", version: "0.1.0" }]);
    const found = cachedBuildsFor([wanted("provider-stamp", "0.1.0")], env);
    expect(found.missing).toEqual([]);
    expect(found.builds.map((b) => b.provider)).toEqual([
      {
        localName: "provider-stamp@0.1.0",
        source: SOURCE,
        version: "0.1.0",
        executable: executablePath(old),
        checksum: old.record.checksum,
        origin: "forge",
        platform: platformKey(),
        installDir: old.dir,
      },
    ]);
  });

  it("trusts producers.json over the repository name, and guesses from the name only without one", () => {
    const ran = cache("0.1.0");
    writeProducers(ran.dir, [{ category: PluginCategory.TOOL, name: "stamp-tools", version: "0.1.0" }]);
    expect(cachedBuildsFor([wanted("stamp-tools", "0.1.0")], env).builds).toHaveLength(1);
    // The build says it is "stamp-tools": a producer merely named like its repository is not it.
    expect(cachedBuildsFor([wanted("provider-stamp", "0.1.0")], env).missing).toHaveLength(1);
    // A build the kernel never ran: its repository name, with or without the prefix.
    cache("0.3.0");
    expect(cachedBuildsFor([wanted("stamp", "0.3.0")], env).builds[0]?.provider.localName).toBe(
      "provider-stamp@0.3.0",
    );
  });

  it("ignores another platform's build", () => {
    cache("0.1.0", platformKey() === "linux_amd64" ? "darwin_arm64" : "linux_amd64");
    const found = cachedBuildsFor([wanted("provider-stamp", "0.1.0")], env);
    expect(found.builds).toEqual([]);
    expect(found.missing.map((m) => m.version)).toEqual(["0.1.0"]);
  });

  it("refuses a build changed after it was downloaded, saying which file", () => {
    const entry = cache("0.1.0");
    writeFileSync(executablePath(entry), "#!/bin/sh\necho tampered\n");
    const found = cachedBuildsFor([wanted("provider-stamp", "0.1.0")], env);
    expect(found.builds).toEqual([]);
    expect(found.missing).toHaveLength(1);
    expect([...found.refused.values()][0]).toContain(
      `${executablePath(entry)} does not match the release asset`,
    );
  });
});

describe("howToGet", () => {
  it("names the required_providers line and the command that downloads the build again", () => {
    const p = wanted("provider-stamp", "0.1.0");
    const installed = new Map([
      ["stamp", [{ category: PluginCategory.TOOL, name: "provider-stamp", version: "0.2.0" }]],
    ]);
    const resolved = [
      { localName: "stamp", source: SOURCE, version: "0.2.0", executable: "/x", origin: "forge" as const },
    ];
    const origin = originOf(p, installed, resolved, env);
    expect(origin).toEqual({ localName: "stamp", source: SOURCE });
    const advice = howToGet(p, origin);
    expect(advice).toContain(`\`stamp = { source = "${SOURCE}", version = "0.1.0" }\``);
    expect(advice).toContain("`agent providers upgrade stamp`");
  });

  it("finds the source from another cached version when agent.hcl no longer names the provider", () => {
    const other = cache("0.2.0");
    writeProducers(other.dir, [{ category: PluginCategory.TOOL, name: "provider-stamp", version: "0.2.0" }]);
    const origin = originOf(wanted("provider-stamp", "0.1.0"), new Map(), [], env);
    expect(origin).toEqual({ source: SOURCE });
    expect(howToGet(wanted("provider-stamp", "0.1.0"), origin)).toContain("`agent providers upgrade <name>`");
    expect(
      howToGet(wanted("ghost", "1.0.0"), originOf(wanted("ghost", "1.0.0"), new Map(), [], env)),
    ).toContain("no provider this project installs, and no cached build, is named ghost");
  });
});
