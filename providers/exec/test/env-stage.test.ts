// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell source, where ${ is parameter expansion.
// What reaches a command's environment, and what is kept for the next call (issue 31,
// point 5): the variable script the last step before the shell sources applies any value
// exactly (quotes, newlines, substitutions stay text), and no loader or startup variable
// a command exports is kept — the next call gets the user's own value, with the sandbox
// off too (where the launcher itself would otherwise load it).
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envScript, LAUNCHER_ENV, loadsCode, scrubKept } from "../src/shell-state.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

describe("the kept environment", () => {
  it("names the loader, shell-startup and interpreter-preload variables, not ordinary ones", () => {
    for (const n of [
      "LD_PRELOAD",
      "LD_LIBRARY_PATH",
      "LD_AUDIT",
      "GLIBC_TUNABLES",
      "BASH_ENV",
      "ENV",
      "BASH_FUNC_ls%%",
      "SHELLOPTS",
      "PS4",
      "NODE_OPTIONS",
      "PYTHONSTARTUP",
      "PYTHONPATH",
      "PERL5OPT",
      "RUBYOPT",
      "JAVA_TOOL_OPTIONS",
      "GCONV_PATH",
      "MALLOC_CHECK_",
      "GIT_SSH_COMMAND",
      "GIT_CONFIG_KEY_0",
      "LUA_INIT_5_4",
      "OPENSSL_CONF",
      "DOTNET_STARTUP_HOOKS",
      "npm_config_script_shell",
      "NPM_CONFIG_NODE_OPTIONS",
      "PYTHONWARNINGS",
      "LESSOPEN",
    ])
      expect(loadsCode(n), n).toBe(true);
    for (const n of ["PATH", "HOME", "NODE_ENV", "LANG", "VIRTUAL_ENV", "CARGO_HOME", "EDITOR"])
      expect(loadsCode(n), n).toBe(false);
  });

  it("puts the user's own value back, or removes the variable", () => {
    const kept = {
      PATH: "/venv/bin:/usr/bin",
      LD_PRELOAD: "/p/evil.so",
      PYTHONPATH: "/p",
      NODE_OPTIONS: "-r x",
    };
    const changed = scrubKept(kept, { PATH: "/usr/bin", PYTHONPATH: "/home/me/lib", NODE_OPTIONS: "-r x" });
    expect(kept).toEqual({ PATH: "/venv/bin:/usr/bin", PYTHONPATH: "/home/me/lib", NODE_OPTIONS: "-r x" });
    expect(changed.sort()).toEqual(["LD_PRELOAD", "PYTHONPATH"]);
  });

  it("is applied by a sourced script that keeps every value as text", () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "env-stage-")));
    try {
      const env = {
        PLAIN: "x",
        QUOTES: `it's "quoted" \\ $HOME $(touch ${dir}/ran) \`id\``,
        NEWLINES: "a\nb\n",
        EMPTY: "",
        "BASH_FUNC_f%%": "() { :; }",
        "dotted.name": "skipped",
      };
      const file = join(dir, "env.sh");
      writeFileSync(file, envScript(env));
      const r = spawnSync("/bin/sh", ["-c", '. "$0" && exec /usr/bin/env -0', file], {
        env: { ...LAUNCHER_ENV },
        encoding: "utf8",
      });
      const got = Object.fromEntries(
        r.stdout
          .split("\0")
          .filter((kv) => kv !== "")
          .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
      );
      delete got["PWD"]; // dash's own
      expect(got).toEqual({ PLAIN: "x", QUOTES: env.QUOTES, NEWLINES: "a\nb\n", EMPTY: "" });
      expect(spawnSync("test", ["-e", join(dir, "ran")]).status).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("with the sandbox off", () => {
  let dir: string;
  let h: ToolHarness;
  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "env-stage-off-")));
    h = new ToolHarness({ executable: MAIN, name: "exec-env" });
    h.kernel.execEnvironment = {
      variables: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir, PYTHONPATH: "/user/lib" },
      withheld: [],
      protectedPaths: [],
    };
    await h.configure({ sandbox: "off", kill_grace_ms: 300 });
  });
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bash = async (command: string) => {
    const inv = await h.invoke("bash", { command }, { cwd: dir, sessionId: "01ENVSTAGE000000000000000001" });
    if (!inv.result) throw new Error(`bash failed: ${JSON.stringify(inv.error)}`);
    return String(inv.result["output"]);
  };

  it("keeps ordinary variables and drops planted loader variables for the next call", async () => {
    await bash(
      "export LD_PRELOAD=/nonexistent/evil.so NODE_OPTIONS=--inspect PYTHONPATH=/planted KEPT=yes; f() { :; }; export -f f",
    );
    const out = await bash(
      'echo "ld=${LD_PRELOAD-unset} node=${NODE_OPTIONS-unset} py=$PYTHONPATH kept=$KEPT"; type f',
    );
    expect(out).toContain("ld=unset node=unset py=/user/lib kept=yes");
    expect(out).toMatch(/f: not found/);
    // A preload that fails to load makes ld.so say so on every process: nothing did.
    expect(out).not.toContain("cannot be preloaded");
  });
});
