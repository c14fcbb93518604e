// The install step against the loopback fake forge: resolution, the checksum file, the
// cache, the lock file's checksums, tokens, mirrors and every refusal.
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import {
  type LockFile,
  parseConstraints,
  parseGlobalConfig,
  type RequiredProvider,
} from "@pluggableharness/config";
import { type FakeForge, goreleaserAssets, startFakeForge, tarGz } from "@pluggableharness/fake-forge";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findEntry, type InstallOptions, installProviders, listEntries } from "../src/index.ts";

const GH_TOKEN = "ghp_canaryTOKEN0123456789abcdefghijklmnop";
const GL_TOKEN = "glpat-canaryTOKEN0123456789";
const MIRROR_TOKEN = "mirror-canary-Z9Y8X7";

let forge: FakeForge;
let cache: string;

beforeEach(async () => {
  forge = await startFakeForge({ githubToken: GH_TOKEN, gitlabToken: GL_TOKEN, mirrorToken: MIRROR_TOKEN });
  cache = mkdtempSync(join(tmpdir(), "registry-cache-"));
});

afterEach(async () => {
  await forge.close();
  rmSync(cache, { recursive: true, force: true });
});

const range = {
  filename: "/p/agent.hcl",
  start: { line: 3, column: 5, byte: 20 },
  end: { line: 3, column: 9, byte: 24 },
};

function req(localName: string, source: string, version: string): RequiredProvider {
  const parsed = parseConstraints(version);
  if (!("constraints" in parsed)) throw new Error("bad constraint");
  return { localName, source, version, constraints: parsed.constraints, range };
}

function release(project: string, version: string, marker = version) {
  return goreleaserAssets({
    project,
    version,
    files: (p) => [
      { path: project, data: `#!/bin/sh\necho ${marker} ${p}\n`, mode: "755" },
      { path: "README.md", data: `# ${project} ${version}\n` },
    ],
  });
}

function opts(over: Partial<InstallOptions> & Pick<InstallOptions, "config">): InstallOptions {
  return {
    env: { AGENT_GITHUB_API_URL: forge.githubApi, AGENT_GITLAB_API_URL: forge.gitlabApi },
    lock: undefined,
    mode: "use",
    platform: "linux_amd64",
    cacheRoot: cache,
    now: new Date("2026-12-01T10:00:00Z"),
    ...over,
  };
}

const lockOf = (entries: Awaited<ReturnType<typeof installProviders>>["entries"]): LockFile => ({
  providers: entries,
});

describe("installing from GitHub releases", () => {
  it("picks the newest satisfying release, verifies it and records every platform's checksum", async () => {
    for (const v of ["1.0.0", "1.1.0", "1.2.0", "2.0.0"]) {
      forge.publish({
        source: "github.com/acme/provider-hello",
        tag: `v${v}`,
        assets: release("provider-hello", v),
      });
    }
    const out = await installProviders(
      opts({ config: { requiredProviders: [req("hello", "github.com/acme/provider-hello", "~> 1.1")] } }),
    );
    expect(out.diagnostics).toEqual([]);
    expect(out.changed).toBe(true);
    const [p] = out.providers;
    expect(p).toMatchObject({
      localName: "hello",
      version: "1.2.0",
      origin: "forge",
      platform: "linux_amd64",
    });
    expect(p!.executable.endsWith("/pkg/provider-hello")).toBe(true);
    expect(
      p!.executable.startsWith(join(cache, "github.com", "acme", "provider-hello", "1.2.0", "linux_amd64")),
    ).toBe(true);
    const [entry] = out.entries;
    expect(Object.keys(entry!.checksums)).toEqual([
      "darwin_amd64",
      "darwin_arm64",
      "linux_amd64",
      "linux_arm64",
    ]);
    expect(entry).toMatchObject({
      name: "hello",
      source: "github.com/acme/provider-hello",
      version: "1.2.0",
      resolved_at: "2026-12-01T10:00:00Z",
    });
    expect(entry!.checksums["linux_amd64"]).toBe(p!.checksum);
  });

  it("runs offline from a warm cache, never asking the forge", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = { requiredProviders: [req("hello", "github.com/acme/provider-hello", ">= 1.0")] };
    const first = await installProviders(opts({ config }));
    expect(first.diagnostics).toEqual([]);
    await forge.close();
    const seen = forge.requests.length;
    const again = await installProviders(opts({ config, lock: lockOf(first.entries) }));
    expect(again.diagnostics).toEqual([]);
    expect(again.changed).toBe(false);
    expect(again.providers[0]!.executable).toBe(first.providers[0]!.executable);
    expect(forge.requests.length).toBe(seen);
  });

  it("refuses an asset whose bytes differ from the release's checksum file, naming it and the platform, caching nothing", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    forge.replaceAsset(
      "github.com/acme/provider-hello",
      "v1.0.0",
      "provider-hello_1.0.0_linux_amd64.tar.gz",
      tarGz([{ path: "provider-hello", data: "#!/bin/sh\necho evil\n", mode: "755" }]),
    );
    const out = await installProviders(
      opts({ config: { requiredProviders: [req("hello", "github.com/acme/provider-hello", "1.0.0")] } }),
    );
    expect(out.providers).toEqual([]);
    expect(out.diagnostics).toHaveLength(1);
    const d = out.diagnostics[0]!;
    expect(d).toMatchObject({ category: "lock_mismatch", file: "/p/agent.hcl", line: 3, column: 5 });
    expect(d.detail).toContain("provider-hello_1.0.0_linux_amd64.tar.gz");
    expect(d.detail).toContain("linux_amd64");
    expect(d.detail).toMatch(/nothing was cached/);
    expect(listEntries(cache)).toEqual([]);
  });

  it("refuses a release re-published after it was locked", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = { requiredProviders: [req("hello", "github.com/acme/provider-hello", "1.0.0")] };
    const first = await installProviders(opts({ config }));
    rmSync(cache, { recursive: true, force: true });
    // Same tag, new bytes and a checksum file to match: only the lock can tell.
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0", "changed"),
    });
    const out = await installProviders(opts({ config, lock: lockOf(first.entries) }));
    expect(out.diagnostics[0]?.category).toBe("lock_mismatch");
    expect(out.diagnostics[0]?.detail).toMatch(
      /linux_amd64.*lock file records sha256:[0-9a-f]{64}.*changed after it was locked/,
    );
  });

  it("refuses a cached copy changed after it was verified, naming the file and the platform", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = { requiredProviders: [req("hello", "github.com/acme/provider-hello", "1.0.0")] };
    const first = await installProviders(opts({ config }));
    const exe = first.providers[0]!.executable;
    writeFileSync(exe, "#!/bin/sh\necho tampered\n");
    chmodSync(exe, 0o755);
    const out = await installProviders(opts({ config, lock: lockOf(first.entries) }));
    expect(out.providers).toEqual([]);
    expect(out.diagnostics[0]?.category).toBe("lock_mismatch");
    expect(out.diagnostics[0]?.detail).toContain(exe);
    expect(out.diagnostics[0]?.detail).toContain("linux_amd64");
    expect(out.diagnostics[0]?.detail).toContain("does not match the release asset");
  });

  it("refuses a file added next to the release's files", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = { requiredProviders: [req("hello", "github.com/acme/provider-hello", "1.0.0")] };
    const first = await installProviders(opts({ config }));
    const extra = join(first.providers[0]!.installDir!, "pkg", "preload.js");
    writeFileSync(extra, "evil()");
    const out = await installProviders(opts({ config, lock: lockOf(first.entries) }));
    expect(out.diagnostics[0]?.detail).toContain(`${extra} is not part of the release asset`);
  });

  it("keeps the locked version until upgrade moves it to the newest within the constraint", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = { requiredProviders: [req("hello", "github.com/acme/provider-hello", "~> 1.0")] };
    const first = await installProviders(opts({ config }));
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.4.0",
      assets: release("provider-hello", "1.4.0"),
    });
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v2.0.0",
      assets: release("provider-hello", "2.0.0"),
    });
    const kept = await installProviders(opts({ config, lock: lockOf(first.entries), mode: "lock" }));
    expect(kept.entries[0]!.version).toBe("1.0.0");
    expect(kept.changed).toBe(false);
    const up = await installProviders(
      opts({ config, lock: lockOf(first.entries), mode: "upgrade", now: new Date("2026-12-02T00:00:00Z") }),
    );
    expect(up.diagnostics).toEqual([]);
    expect(up.entries[0]).toMatchObject({ version: "1.4.0", resolved_at: "2026-12-02T00:00:00Z" });
    expect(up.changed).toBe(true);
    expect(up.providers[0]!.version).toBe("1.4.0");
  });

  it("says which versions exist when none satisfies the constraint", async () => {
    for (const v of ["0.9.0", "1.0.0", "1.1.0"]) {
      forge.publish({
        source: "github.com/acme/provider-hello",
        tag: `v${v}`,
        assets: release("provider-hello", v),
      });
    }
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v3.0.0-rc.1",
      assets: release("provider-hello", "3.0.0-rc.1"),
    });
    const out = await installProviders(
      opts({ config: { requiredProviders: [req("hello", "github.com/acme/provider-hello", ">= 2.0")] } }),
    );
    expect(out.diagnostics).toHaveLength(1);
    expect(out.diagnostics[0]).toMatchObject({
      category: "version_constraint",
      summary: 'Cannot install provider "hello"',
    });
    expect(out.diagnostics[0]!.detail).toBe(
      `No release of github.com/acme/provider-hello satisfies ">= 2.0" (agent.hcl asks for it); GitHub (${forge.githubApi}) has 3.0.0-rc.1, 1.1.0, 1.0.0, 0.9.0.`,
    );
  });

  it("says which platforms a release has when it has none for this one", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: goreleaserAssets({
        project: "provider-hello",
        version: "1.0.0",
        platforms: ["darwin_arm64"],
        files: () => [{ path: "provider-hello", data: "x", mode: "755" }],
      }),
    });
    const out = await installProviders(
      opts({ config: { requiredProviders: [req("hello", "github.com/acme/provider-hello", "1.0.0")] } }),
    );
    expect(out.diagnostics[0]!.detail).toBe(
      "github.com/acme/provider-hello 1.0.0 publishes no build for linux_amd64; it has darwin_arm64.",
    );
  });

  it("lists more than one page of releases", async () => {
    for (let i = 0; i < 130; i++) {
      forge.publish({ source: "github.com/acme/many", tag: `v0.${i}.0`, assets: { "x.txt": "x" } });
    }
    forge.publish({
      source: "github.com/acme/many",
      tag: "v0.0.1",
      assets: release("many", "0.0.1"),
    });
    const out = await installProviders(
      opts({ config: { requiredProviders: [req("many", "github.com/acme/many", "0.0.1")] } }),
    );
    expect(out.diagnostics).toEqual([]);
    expect(forge.requests.filter((r) => r.path.includes("/releases?")).length).toBeGreaterThanOrEqual(2);
  });

  it("keeps every path of an archive inside its entry, and refuses links", async () => {
    const { checksumFile } = await import("@pluggableharness/fake-forge");
    const escaping = {
      "provider-up_1.0.0_linux_amd64.tar.gz": tarGz([
        { path: "../../provider-up", data: "#!/bin/sh\n", mode: "755" },
      ]),
    };
    forge.publish({
      source: "github.com/acme/provider-up",
      tag: "v1.0.0",
      assets: { ...escaping, "provider-up_1.0.0_checksums.txt": checksumFile(escaping) },
    });
    const up = await installProviders(
      opts({ config: { requiredProviders: [req("up", "github.com/acme/provider-up", "1.0.0")] } }),
    );
    expect(up.diagnostics).toEqual([]);
    // The tar reader drops `..` segments: the file lands inside the entry's pkg/.
    expect(up.providers[0]!.executable).toBe(join(up.providers[0]!.installDir!, "pkg", "provider-up"));
    expect(readdirSync(join(cache, "github.com", "acme"))).toEqual(["provider-up"]);

    const linked = {
      "provider-ln_1.0.0_linux_amd64.tar.gz": gzipSync(
        withTypeFlag(gunzipSync(tarGz([{ path: "provider-ln", data: "", mode: "755" }])), "2"),
      ),
    };
    forge.publish({
      source: "github.com/acme/provider-ln",
      tag: "v1.0.0",
      assets: { ...linked, "provider-ln_1.0.0_checksums.txt": checksumFile(linked) },
    });
    const ln = await installProviders(
      opts({ config: { requiredProviders: [req("ln", "github.com/acme/provider-ln", "1.0.0")] } }),
    );
    expect(ln.diagnostics[0]!.detail).toContain(
      'holds "provider-ln", a symbolicLink entry; only regular files are installed',
    );
    expect(listEntries(cache).map((e) => e.record.source)).toEqual(["github.com/acme/provider-up"]);
  });
});

/** The tar with its first entry's type flag changed (and the header checksum redone). */
function withTypeFlag(tar: Uint8Array, flag: string): Uint8Array {
  const out = new Uint8Array(tar);
  out[156] = flag.charCodeAt(0);
  out.fill(0x20, 148, 156);
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += out[i]!;
  const text = `${sum.toString(8).padStart(6, "0")}\0 `;
  for (let i = 0; i < 8; i++) out[148 + i] = text.charCodeAt(i);
  return out;
}

describe("credentials", () => {
  it("a private repository needs GITHUB_TOKEN, which never follows the download's redirect", async () => {
    forge.publish({
      source: "github.com/acme/secret",
      tag: "v1.0.0",
      assets: release("secret", "1.0.0"),
      private: true,
    });
    const config = { requiredProviders: [req("secret", "github.com/acme/secret", "1.0.0")] };
    const without = await installProviders(opts({ config }));
    expect(without.diagnostics[0]!.detail).toContain("If the repository is private, set GITHUB_TOKEN.");

    const bad = await installProviders(
      opts({ config, env: { AGENT_GITHUB_API_URL: forge.githubApi, GITHUB_TOKEN: "ghp_wrongCANARY" } }),
    );
    expect(bad.diagnostics[0]!.detail).toContain("the credential from GITHUB_TOKEN was not accepted");
    expect(bad.diagnostics[0]!.detail).not.toContain("ghp_wrongCANARY");

    const before = forge.requests.length;
    const ok = await installProviders(
      opts({ config, env: { AGENT_GITHUB_API_URL: forge.githubApi, GITHUB_TOKEN: GH_TOKEN } }),
    );
    expect(ok.diagnostics).toEqual([]);
    const storage = forge.requests.filter((r) => r.server === "storage");
    expect(storage.length).toBeGreaterThan(0);
    for (const r of storage) expect(JSON.stringify(r.headers)).not.toContain(GH_TOKEN);
    const api = forge.requests.slice(before).filter((r) => r.server === "forge");
    expect(api.length).toBeGreaterThanOrEqual(3); // the list, the checksum file, the archive
    for (const r of api) expect(r.headers.authorization).toBe(`Bearer ${GH_TOKEN}`);
  });

  it("GitLab releases, with GITLAB_TOKEN for a private project", async () => {
    forge.publish({
      source: "gitlab.com/acme/tools/provider-gl",
      tag: "v0.3.1",
      assets: release("provider-gl", "0.3.1"),
      private: true,
    });
    const config = { requiredProviders: [req("gl", "gitlab.com/acme/tools/provider-gl", "~> 0.3.0")] };
    const without = await installProviders(opts({ config }));
    expect(without.diagnostics[0]!.detail).toContain("set GITLAB_TOKEN");
    const ok = await installProviders(
      opts({ config, env: { AGENT_GITLAB_API_URL: forge.gitlabApi, GITLAB_TOKEN: GL_TOKEN } }),
    );
    expect(ok.diagnostics).toEqual([]);
    expect(ok.providers[0]).toMatchObject({ version: "0.3.1" });
    expect(ok.providers[0]!.installDir).toContain(
      join("gitlab.com", "acme", "tools", "provider-gl", "0.3.1"),
    );
  });

  it("a registry mirror (longest prefix, env() auth) is used instead of the forge, and gets no forge token", async () => {
    forge.publish({
      source: "github.com/acme/provider-m",
      tag: "v1.0.0",
      assets: release("provider-m", "1.0.0"),
      mirror: true,
      private: true,
    });
    const globalText = `registry_mirror {
  default = "http://127.0.0.1:1/unused"
  mirror {
    prefix = "github.com/"
    url    = "http://127.0.0.1:1/also-unused"
  }
  mirror {
    prefix = "github.com/acme/"
    url    = "${forge.mirrorUrl}/github.com/acme"
    auth   = env("ACME_MIRROR_TOKEN")
  }
}
`;
    const env = { ACME_MIRROR_TOKEN: MIRROR_TOKEN, GITHUB_TOKEN: GH_TOKEN };
    const g = parseGlobalConfig(globalText, "/cfg/config.hcl", env);
    if (!g.ok) throw new Error(JSON.stringify(g.diagnostics));
    const out = await installProviders(
      opts({
        config: { requiredProviders: [req("m", "github.com/acme/provider-m", "1.0.0")] },
        env,
        global: g.config,
      }),
    );
    expect(out.diagnostics).toEqual([]);
    const mirrorRequests = forge.requests.filter((r) => r.path.startsWith("/mirror/"));
    expect(mirrorRequests.map((r) => r.path)).toContain("/mirror/github.com/acme/provider-m/index.json");
    expect(forge.requests.some((r) => r.path.startsWith("/github/"))).toBe(false);
    for (const r of mirrorRequests) {
      expect(r.headers.authorization).toBe(`Bearer ${MIRROR_TOKEN}`);
      expect(JSON.stringify(r.headers)).not.toContain(GH_TOKEN);
    }

    const noAuth = parseGlobalConfig(globalText, "/cfg/config.hcl", {});
    expect(noAuth.ok).toBe(false);
    if (!noAuth.ok) expect(JSON.stringify(noAuth.diagnostics)).not.toContain(MIRROR_TOKEN);
  });

  it("a mirror without its credential is refused with the variable to set, and the message holds no secret", async () => {
    forge.publish({
      source: "github.com/acme/provider-m",
      tag: "v1.0.0",
      assets: release("provider-m", "1.0.0"),
      mirror: true,
    });
    const g = parseGlobalConfig(
      `registry_mirror {\n  default = "${forge.mirrorUrl}"\n}\n`,
      "/cfg/config.hcl",
      {},
    );
    if (!g.ok) throw new Error("global");
    const out = await installProviders(
      opts({
        config: { requiredProviders: [req("m", "github.com/acme/provider-m", "1.0.0")] },
        global: g.config,
        env: { GITHUB_TOKEN: GH_TOKEN },
      }),
    );
    expect(out.diagnostics[0]!.detail).toMatch(/HTTP 401.*needs a credential/);
    expect(JSON.stringify(out.diagnostics)).not.toContain(GH_TOKEN);
    const mirrorRequests = forge.requests.filter((r) => r.path.startsWith("/mirror/"));
    expect(mirrorRequests.every((r) => r.headers.authorization === undefined)).toBe(true);
  });
});

describe("the cache", () => {
  it("keys entries by source, version, platform and checksum, and two installs share one entry", async () => {
    forge.publish({
      source: "github.com/acme/provider-hello",
      tag: "v1.0.0",
      assets: release("provider-hello", "1.0.0"),
    });
    const config = {
      requiredProviders: [
        req("a", "github.com/acme/provider-hello", "1.0.0"),
        req("b", "github.com/acme/provider-hello", "1.0.0"),
      ],
    };
    const out = await installProviders(opts({ config }));
    expect(out.diagnostics).toEqual([]);
    expect(out.providers[0]!.installDir).toBe(out.providers[1]!.installDir);
    const hex = out.entries[0]!.checksums["linux_amd64"]!.slice("sha256:".length);
    expect(readdirSync(join(cache, "github.com", "acme", "provider-hello", "1.0.0", "linux_amd64"))).toEqual([
      hex,
    ]);
    expect(
      findEntry(cache, "github.com/acme/provider-hello", "1.0.0", "linux_amd64", `sha256:${hex}`),
    ).toBeDefined();
    expect(existsSync(join(cache, ".tmp"))).toBe(true);
    expect(readdirSync(join(cache, ".tmp"))).toEqual([]);
  });
});
