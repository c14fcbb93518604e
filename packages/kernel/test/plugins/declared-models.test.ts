// A model provider whose models come from its configuration (an OpenAI-compatible
// server's model list) advertises them only after Configure. The kernel reads its
// capabilities again once it is configured, so a profile routed to such a model
// gets a session (the zero-config OPENAI_BASE_URL + OPENAI_MODEL path relies on it).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKernel, type KernelLogRecord } from "../../src/index.ts";

const COMPAT = fileURLToPath(new URL("../../../../providers/openai-compatible/src/main.ts", import.meta.url));
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kernel-declared-models-"));
  writeFileSync(
    join(dir, "agent.hcl"),
    `required_providers {
  compat = {
    source  = "github.com/example/provider-compat"
    version = ">= 0.0.0"
  }
}

provider "compat" {
  base_url = "http://127.0.0.1:9/v1"
  model    = "local-model"
}

agent_profile "default" {
  model {
    primary {
      provider = "compat"
      id       = "local-model"
    }
  }
}
`,
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("models declared by configuration", () => {
  it("are routable once the provider is configured, without an unknown-model warning", async () => {
    const logs: KernelLogRecord[] = [];
    const kernel = await createKernel({
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
    try {
      const session = await kernel.startSession();
      expect(session.profile).toBe("default");
      expect(logs.filter((l) => l.message.includes("unknown_model"))).toEqual([]);
    } finally {
      await kernel.shutdown();
    }
  });
});
