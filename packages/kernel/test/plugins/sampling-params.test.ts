// A profile that sets a sampling parameter its model refuses (ModelSpec.sampling): a
// load-time warning naming file:line:col once the provider's models are known, or with
// settings.strict_params an error that stops the kernel before any session.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKernel, type KernelLogRecord } from "../../src/index.ts";

const COMPAT = fileURLToPath(new URL("../../../../providers/openai-compatible/src/main.ts", import.meta.url));
let dir: string;

const hcl = (strict: boolean) => `required_providers {
  compat = {
    source  = "github.com/example/provider-compat"
    version = ">= 0.0.0"
  }
}

provider "compat" {
  base_url    = "http://127.0.0.1:9/v1"
  models_json = "{\\"no-sampling\\": {\\"context_window\\": 8000, \\"max_output_tokens\\": 512, \\"sampling\\": []}}"
}

agent_profile "default" {
  model {
    primary {
      provider    = "compat"
      id          = "no-sampling"
      temperature = 0.2
    }
  }
}
${strict ? "settings {\n  strict_params = true\n}\n" : ""}`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kernel-sampling-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function start(strict: boolean, logs: KernelLogRecord[]) {
  writeFileSync(join(dir, "agent.hcl"), hcl(strict));
  return createKernel({
    projectDir: dir,
    installationRoot: dir,
    stateDir: join(dir, "sessions"),
    env: {},
    globalConfig: false,
    devOverrides: { compat: COMPAT },
    durability: "normal",
    logSink: (r) => logs.push(r),
    logLevel: "warn",
  });
}

describe("sampling parameters the model refuses", () => {
  it("are a load-time warning at the attribute; the session still starts", async () => {
    const logs: KernelLogRecord[] = [];
    const kernel = await start(false, logs);
    try {
      const warned = logs.filter((l) => l.message.includes("Parameter not accepted by the model"));
      expect(warned.map((l) => l.message)).toEqual([
        expect.stringMatching(
          /agent\.hcl:18:21: .*sets temperature for "compat\/no-sampling", but no-sampling does not accept temperature; it will not be sent/,
        ),
      ]);
      expect((await kernel.startSession()).profile).toBe("default");
    } finally {
      await kernel.shutdown();
    }
  });

  it("are an error under settings.strict_params: the kernel does not start", async () => {
    await expect(start(true, [])).rejects.toThrow(/agent\.hcl:18:21[\s\S]*does not accept temperature/);
  });
});
