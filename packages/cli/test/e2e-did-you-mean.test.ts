// A misspelled provider name in agent.hcl, checked by the real `agent validate`: the
// error names file:line:col and the provider that was probably meant, for a provider
// block naming an undeclared local name and for a first-party source with a typo.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
beforeAll(() => {
  sb = sandbox();
});
afterAll(() => sb?.cleanup());

describe("did you mean, for provider names", () => {
  it("suggests the declared provider and the first-party source nearest the typo", async () => {
    const dir = sb.dir("typo");
    const file = join(dir, "agent.hcl");
    writeFileSync(
      file,
      `required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  git = { source = "pluggableharness/gti", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesytem", version = ">= 0.1.0" }
}
provider "anthropic" { api_key = env("ANTHROPIC_API_KEY") }
provider "filesystm" { roots = ["."] }
`,
    );
    const validate = async () => {
      const r = await agent(["validate"], { cwd: dir, env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test" } });
      expect(r.code).toBe(1);
      return r.stdout + r.stderr;
    };
    let out = await validate();
    expect(out).toContain(
      `${file}:7:10: error[unknown_provider]: Unknown provider: This provider block names "filesystm", which is not declared in required_providers (declared: anthropic, git, filesystem). Did you mean "filesystem"?`,
    );
    // With the block's name right, the sources are resolved, and their typos named.
    writeFileSync(file, readFileSync(file, "utf8").replace('"filesystm"', '"filesystem"'));
    out = await validate();
    expect(out).toMatch(
      new RegExp(
        `${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:3:3: error\\[source_address\\].*Did you mean "pluggableharness/git"\\?`,
      ),
    );
    expect(out).toMatch(/:4:3: error\[source_address\].*Did you mean "pluggableharness\/filesystem"\?/);
  });
});
