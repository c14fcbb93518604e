// The env policy for commands (exec-env.ts): the user's environment minus every
// variable an env() in the configuration reads, minus secret-looking names, without the
// agent's private Node.js on PATH. Canary values must never come through.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { envNamesReadByConfig, execEnvironment, withheldValues } from "../src/index.ts";

const CANARY = "canary-5d1e9b7f3a";
/** An HCL template's "$", kept out of this file's own template strings. */
const DOLLAR = "$";

describe("the exec environment", () => {
  it("withholds env()-read variables and secret patterns, keeps the user's own", () => {
    const project = mkdtempSync(join(tmpdir(), "exec-env-"));
    const config = join(project, "xdg");
    mkdirSync(join(config, "agent"), { recursive: true });
    writeFileSync(
      join(project, "agent.hcl"),
      'provider "a" {\n  api_key  = env("VENDOR_CRED")\n  base_url = env( "VENDOR_URL" )\n}\n',
    );
    writeFileSync(join(config, "agent", "config.hcl"), 'registry_mirror { token = env("MIRROR_AUTH") }\n');
    const source = {
      HOME: "/home/u",
      LANG: "en_US.UTF-8",
      EDITOR: "vim",
      GOPATH: "/home/u/go",
      XDG_CONFIG_HOME: config,
      VENDOR_CRED: CANARY,
      VENDOR_URL: `https://${CANARY}.example`,
      MIRROR_AUTH: CANARY,
      AWS_SECRET_ACCESS_KEY: CANARY,
      GITHUB_TOKEN: CANARY,
      DB_PASSWORD: CANARY,
      openai_api_key: CANARY,
      npm_config_cache: "/x",
      npm_lifecycle_event: "start",
      PATH: "/repo/node_modules/.bin:/repo/node_modules/node/bin:/home/u/bin:/usr/bin:/bin",
    };
    const names = envNamesReadByConfig(project, source);
    expect(names).toEqual(["MIRROR_AUTH", "VENDOR_CRED", "VENDOR_URL"]);
    const e = execEnvironment(source, {
      configNames: names,
      patterns: ["DB_*"],
      installationRoot: "/repo",
      execPath: "/repo/node_modules/node/bin/node",
    });
    expect(JSON.stringify(e)).not.toContain(CANARY);
    expect(e.variables).toEqual({
      HOME: "/home/u",
      LANG: "en_US.UTF-8",
      EDITOR: "vim",
      GOPATH: "/home/u/go",
      XDG_CONFIG_HOME: config,
      PATH: "/home/u/bin:/usr/bin:/bin",
    });
    expect(e.withheld).toEqual([
      "AWS_SECRET_ACCESS_KEY",
      "DB_PASSWORD",
      "GITHUB_TOKEN",
      "MIRROR_AUTH",
      "VENDOR_CRED",
      "VENDOR_URL",
      "openai_api_key",
    ]);
  });

  it("keeps a node the user installed outside the agent on PATH", () => {
    const e = execEnvironment(
      { PATH: "/usr/local/bin:/usr/bin" },
      { configNames: [], installationRoot: "/repo", execPath: "/usr/local/bin/node" },
    );
    expect(e.variables["PATH"]).toBe("/usr/local/bin:/usr/bin");
  });

  it("finds the name of every env() call, however it is spelled", () => {
    const project = mkdtempSync(join(tmpdir(), "exec-env-"));
    // Each spelling the configuration's evaluator accepts for reading a variable.
    writeFileSync(
      join(project, "agent.hcl"),
      [
        'provider "mcp" {',
        "  env = {",
        '    A = env ("SPACED")',
        '    B = env(\n      "ON_ITS_OWN_LINE"\n    )',
        '    C = env(/* why */ "AFTER_COMMENT")',
        `    D = env("TEMPL${DOLLAR}{"ATED"}")`,
        '    E = env("ESC\\u0041PED")',
        '    F = env(env("INDIRECT"))',
        `    G = "Bearer ${DOLLAR}{env("IN_TEMPLATE")}"`,
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    const source = { XDG_CONFIG_HOME: join(project, "none"), INDIRECT: "POINTED_AT" };
    expect(envNamesReadByConfig(project, source)).toEqual([
      "AFTER_COMMENT",
      "ESCAPED",
      "INDIRECT",
      "IN_TEMPLATE",
      "ON_ITS_OWN_LINE",
      "POINTED_AT",
      "SPACED",
      "TEMPLATED",
    ]);
  });

  it("masks every withheld value but a path that exists on this machine", () => {
    const project = mkdtempSync(join(tmpdir(), "exec-env-"));
    writeFileSync(
      join(project, "agent.hcl"),
      'provider "p" {\n  roots = [env("WORK")]\n  a = env("PLAIN")\n  b = env("NOT_A_PATH")\n}\n',
    );
    const source = {
      XDG_CONFIG_HOME: join(project, "none"),
      WORK: project,
      PLAIN: "Zq7vK2pW9xR4mT8n",
      NOT_A_PATH: "/no/such/place/Zq7v",
      SOME_TOKEN: CANARY,
    };
    expect(withheldValues(project, source).sort()).toEqual([
      "/no/such/place/Zq7v",
      "Zq7vK2pW9xR4mT8n",
      CANARY,
    ]);
    // Still withheld from commands.
    const names = envNamesReadByConfig(project, source);
    expect(execEnvironment(source, { configNames: names }).withheld).toContain("WORK");
  });
});
