// Vitest's global setup: a scratch directory for the run, where installed.ts packs and
// installs the CLI the first time a test file asks for it (nothing happens otherwise).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    installedAgentDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "agent-installed-"));
  project.provide("installedAgentDir", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
