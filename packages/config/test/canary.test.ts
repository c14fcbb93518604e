// A canary secret set in the environment must reach the decoded Configure payload
// and nothing else: no diagnostic, thrown error, log line, or serialisation of
// the loaded configuration objects.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import {
  type ConfigDiagnostic,
  type ConfigLogger,
  decodeProviderConfig,
  decodeProviderConfigOrThrow,
  loadGlobalConfig,
  loadProjectConfig,
  validateAgainstProviders,
} from "../src/index.ts";
import { CANARY, VENDOR_SCHEMA } from "./helpers.ts";

const ENV = { ANTHROPIC_API_KEY: CANARY, MIRROR_TOKEN: CANARY, PH_CANARY_NUM: CANARY };
const root = mkdtempSync(join(tmpdir(), "ph-config-canary-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const logs: string[] = [];
const logger: ConfigLogger = {
  debug: (message, fields) => logs.push(`${message} ${JSON.stringify(fields ?? {})}`),
};

function project(name: string, providerBody: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, "agent.hcl"),
    `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0"
  }
}

provider "anthropic" {
${providerBody}
}
`,
  );
  return dir;
}

function load(dir: string) {
  const r = loadProjectConfig(dir, { env: ENV, logger });
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.detail).join("\n"));
  return r.config;
}

const texts = (ds: readonly ConfigDiagnostic[]) => ds.map((d) => `${d.summary}\n${d.detail}`).join("\n");

describe("canary secret", () => {
  it("reaches the Configure payload and nothing else on success", () => {
    const config = load(
      project("ok", '  api_key = env("ANTHROPIC_API_KEY")\n  auth { token = env("ANTHROPIC_API_KEY") }'),
    );
    const r = decodeProviderConfig(config, "anthropic", VENDOR_SCHEMA, ENV);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.values.api_key).toBe(CANARY);
    expect(JSON.stringify(r.config.values)).toContain(CANARY);
    expect(JSON.stringify(config)).not.toContain(CANARY);
    expect(inspect(config, { depth: null })).not.toContain(CANARY);
    expect(JSON.stringify(config.warnings)).not.toContain(CANARY);
  });

  it("stays out of diagnostics when other attributes fail after it was resolved", () => {
    const config = load(
      project(
        "fail",
        [
          '  api_key   = env("ANTHROPIC_API_KEY")',
          '  timeout_s = "not a number"',
          '  models    = [env("ANTHROPIC_API_KEY"), ["nested"]]',
          '  headers   = { (env("ANTHROPIC_API_KEY")) = "a", (env("ANTHROPIC_API_KEY")) = "b" }',
          '  verbose   = env("ANTHROPIC_API_KEY")',
          "  nope      = 1",
        ].join("\n"),
      ),
    );
    const r = decodeProviderConfig(config, "anthropic", VENDOR_SCHEMA, ENV);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics.length).toBeGreaterThanOrEqual(4);
    expect(texts(r.diagnostics)).not.toContain(CANARY);
    expect(JSON.stringify(r)).not.toContain(CANARY);
  });

  it("stays out of thrown errors (message, stack and attached diagnostics)", () => {
    const config = load(
      project("throw", '  api_key = env("ANTHROPIC_API_KEY")\n  timeout_s = env("ANTHROPIC_API_KEY")'),
    );
    let caught: unknown;
    try {
      decodeProviderConfigOrThrow(config, "anthropic", VENDOR_SCHEMA, ENV);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Error);
    const e = caught as Error & { diagnostics: ConfigDiagnostic[] };
    expect(e.message).toContain("timeout_s");
    expect(e.message).not.toContain(CANARY);
    expect(String(e.stack)).not.toContain(CANARY);
    expect(JSON.stringify(e.diagnostics)).not.toContain(CANARY);
    expect(inspect(e, { depth: null })).not.toContain(CANARY);
  });

  it("stays out of a sensitive number that does not parse", () => {
    const config = load(project("num", '  api_key = env("ANTHROPIC_API_KEY")'));
    const schema = {
      attributes: [
        { name: "api_key", type: 2 /* NUMBER */, required: true, sensitive: true, objectAttributes: [] },
      ],
    };
    const r = decodeProviderConfig(config, "anthropic", schema, ENV);
    expect(!r.ok && r.diagnostics[0]!.category).toBe("type");
    expect(JSON.stringify(r)).not.toContain(CANARY);
  });

  it("stays out of the second validation pass", () => {
    const config = load(project("validate", '  api_key = env("ANTHROPIC_API_KEY")\n  verbose = 7'));
    const ds = validateAgainstProviders(config, { anthropic: { configSchema: VENDOR_SCHEMA } }, ENV);
    expect(ds.map((d) => d.category)).toEqual(["type"]);
    expect(JSON.stringify(ds)).not.toContain(CANARY);
  });

  it("stays out of the global config object and its diagnostics", () => {
    const file = join(root, "config.hcl");
    writeFileSync(
      file,
      `registry_mirror {
  mirror {
    prefix = "github.com/agentco/"
    url    = "https://mirror.example.com"
    auth   = env("MIRROR_TOKEN")
  }
}
`,
    );
    const r = loadGlobalConfig({ path: file, env: ENV, logger });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const auth = r.config.registryMirror!.mirrors[0]!.auth!;
    expect(auth.reveal()).toBe(CANARY);
    expect(JSON.stringify(r.config)).not.toContain(CANARY);
    expect(inspect(r.config, { depth: null })).not.toContain(CANARY);
    expect(`${auth}`).not.toContain(CANARY);

    writeFileSync(
      file,
      `${`registry_mirror {\n  mirror {\n    prefix = "x/"\n    auth   = env("MIRROR_TOKEN")\n  }\n}\n`}`,
    );
    const bad = loadGlobalConfig({ path: file, env: ENV, logger });
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad)).not.toContain(CANARY);
  });

  it("never reaches the log sink", () => {
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join("\n")).not.toContain(CANARY);
    expect(logs.every((l) => l.startsWith("loading"))).toBe(true);
  });
});
