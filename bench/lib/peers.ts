// Installs the peer harnesses from npm into bench/.peers/<id> (gitignored; never a
// dependency of the project). Versions are pinned so that a results file names exactly what
// was measured; `--peer-version id=x.y.z` overrides one.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Availability, BenchEnv } from "../harnesses/types.ts";

export interface PeerPackage {
  id: string;
  pkg: string;
  version: string;
}

export const PEER_PACKAGES: Record<string, PeerPackage> = {
  "claude-code": { id: "claude-code", pkg: "@anthropic-ai/claude-code", version: "2.1.332" },
  codex: { id: "codex", pkg: "@openai/codex", version: "0.171.0" },
  opencode: { id: "opencode", pkg: "opencode-ai", version: "1.18.33" },
  pi: { id: "pi", pkg: "@earendil-works/pi-coding-agent", version: "1.6.0" },
};

export const versionOverrides = new Map<string, string>();

export function peerDir(env: BenchEnv, id: string): string {
  return join(env.peersDir, id);
}

function installedVersion(dir: string, pkg: string): string | undefined {
  const manifest = join(dir, "node_modules", pkg, "package.json");
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version?: string }).version;
}

/** Makes sure the pinned version is installed; returns its version or why it is not usable. */
export function ensurePeer(env: BenchEnv, id: string): Availability {
  const p = PEER_PACKAGES[id]!;
  const want = versionOverrides.get(id) ?? p.version;
  const dir = peerDir(env, id);
  const have = installedVersion(dir, p.pkg);
  if (have === want || (have !== undefined && want === "latest")) return { ok: true, version: have };
  if (env.noInstall) {
    return { ok: false, reason: `not installed (${p.pkg}@${want}; run without --no-install)` };
  }
  mkdirSync(dir, { recursive: true });
  // Its own package.json makes the folder an npm project of its own, so npm never walks up
  // to the monorepo's workspace root.
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ private: true, name: `bench-peer-${id}` })}\n`,
  );
  env.log(`installing ${p.pkg}@${want} into ${dir}`);
  try {
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--save-exact", `${p.pkg}@${want}`], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 10 * 60_000,
    });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    const tail = (err.stderr?.toString("utf8") ?? err.message).trim().split("\n").slice(-3).join(" | ");
    return { ok: false, reason: `npm install ${p.pkg}@${want} failed: ${tail}` };
  }
  const got = installedVersion(dir, p.pkg);
  return got ? { ok: true, version: got } : { ok: false, reason: `npm install left no ${p.pkg} in ${dir}` };
}
