// Builds and runs the reference program (go/hclref.go) against Debian's
// hcl/v2 in GOPATH mode: no modules, no proxy, no network. The binary is
// cached by a hash of its source and of the Go toolchain version, so only the
// first run on a machine pays for the build (a few seconds).

import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where Debian installs Go library sources (golang-github-hashicorp-hcl-v2-dev and its dependencies). */
export const GOCODE = "/usr/share/gocode";
export const HCL_SOURCE = join(GOCODE, "src/github.com/hashicorp/hcl/v2");

const SOURCE = fileURLToPath(new URL("../go/hclref.go", import.meta.url));

export interface Toolchain {
  go: string;
  goVersion: string;
  hclVersion: string;
}

/** The Go toolchain and Debian's hcl/v2, or why they cannot be used. */
export function findToolchain(): Toolchain | { missing: string } {
  const go = ["/usr/bin/go", "/usr/lib/go/bin/go"].find((p) => existsSync(p));
  if (go === undefined) return { missing: "no Go toolchain (Debian package golang-go)" };
  if (!existsSync(join(HCL_SOURCE, "hclsyntax/parser.go"))) {
    return {
      missing: `no hcl/v2 sources under ${HCL_SOURCE} (Debian package golang-github-hashicorp-hcl-v2-dev)`,
    };
  }
  const v = spawnSync(go, ["version"], { encoding: "utf8", env: goEnv(tmpdir()) });
  if (v.status !== 0) return { missing: `"go version" failed: ${v.stderr}` };
  return { go, goVersion: v.stdout.trim(), hclVersion: debianVersion("golang-github-hashicorp-hcl-v2-dev") };
}

function debianVersion(pkg: string): string {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax.
  const r = spawnSync("dpkg-query", ["-W", "-f=${Version}", pkg], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "unknown";
}

/** GOPATH mode with Debian's sources; nothing is ever fetched. */
function goEnv(cache: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: cache,
    GO111MODULE: "off",
    GOPATH: `${join(cache, "gopath")}:${GOCODE}`,
    GOCACHE: join(cache, "gocache"),
    GOPROXY: "off",
    GOFLAGS: "",
    CGO_ENABLED: "0",
  };
}

/** Builds the reference program if it is not cached yet; returns the binary's path. */
export function buildReference(tc: Toolchain): string {
  const hash = createHash("sha256")
    .update(readFileSync(SOURCE))
    .update(tc.goVersion)
    .update(tc.hclVersion)
    .digest("hex")
    .slice(0, 16);
  const cache = join(tmpdir(), "pluggableharness-hclref");
  const bin = join(cache, `hclref-${hash}`);
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  const partial = `${bin}.${process.pid}.tmp`;
  const r = spawnSync(tc.go, ["build", "-o", partial, SOURCE], {
    encoding: "utf8",
    env: goEnv(cache),
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`building ${SOURCE} failed:\n${r.stderr}${r.error ?? ""}`);
  renameSync(partial, bin);
  return bin;
}

export interface ReferenceInput {
  id: string;
  bytes: Uint8Array;
  variables: Record<string, unknown>;
  env: Record<string, string>;
  /** Names of the functions available; all of them when absent. */
  functions?: string[];
}

export type Triple = [line: number, column: number, byte: number];
export type RangeTuple = [Triple, Triple];

export interface RefDiag {
  sev: "error" | "warning";
  summary: string;
  from: Triple;
  to: Triple;
}

export interface AttrItem<D, V> {
  attr: string;
  name: RangeTuple;
  expr: RangeTuple;
  value?: V;
  diags?: D[];
}

export interface BlockItem<I> {
  block: string;
  labels: string[];
  type: RangeTuple;
  labelRanges: RangeTuple[];
  open: RangeTuple;
  close: RangeTuple;
  body: I[];
}

export type RefItem = AttrItem<RefDiag, unknown> | BlockItem<RefItem>;

export interface RefResult {
  id: string;
  diags: RefDiag[];
  body?: RefItem[];
  panic?: string;
}

/** Runs every input through one reference process; results come back in input order. */
export function runReference(bin: string, inputs: readonly ReferenceInput[]): Promise<RefResult[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [], { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) {
        reject(new Error(`hclref exited with ${code}: ${Buffer.concat(err).toString()}`));
        return;
      }
      const lines = Buffer.concat(out)
        .toString("utf8")
        .split("\n")
        .filter((l) => l !== "");
      const results = lines.map((l) => JSON.parse(l) as RefResult);
      if (results.length !== inputs.length) {
        reject(new Error(`hclref answered ${results.length} of ${inputs.length} inputs`));
        return;
      }
      resolve(results);
    });
    const payload = inputs
      .map((i) =>
        JSON.stringify({
          id: i.id,
          src: Buffer.from(i.bytes).toString("base64"),
          vars: i.variables,
          env: i.env,
          ...(i.functions === undefined ? {} : { functions: i.functions }),
        }),
      )
      .join("\n");
    child.stdin.end(`${payload}\n`);
  });
}
