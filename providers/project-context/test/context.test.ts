// The project-context provider over the real plugin boundary (process and worker): capabilities, the
// convention files it finds, the chain it returns, kernel-counted tokens and the budget.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  fallbackTokenCount,
  type LaunchedPlugin,
  launchPlugin,
  TRANSPORTS,
} from "@pluggableharness/conformance";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type ContextSection, Stability } from "@pluggableharness/protocol/content";
import { ContextService } from "@pluggableharness/protocol/context";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
describe.each(TRANSPORTS)("over the %s transport", (isolation) => {
  let repo: string;
  let plugin: LaunchedPlugin;

  beforeAll(() => {
    repo = realpathSync(mkdtempSync(join(tmpdir(), "ph-ctx-")));
    mkdirSync(join(repo, ".git"));
    mkdirSync(join(repo, "pkg", "deep"), { recursive: true });
    writeFileSync(
      join(repo, "AGENTS.md"),
      "---\ntitle: x\n---\n# Repo rules\n<!-- hidden note -->\nUse tabs.\n",
    );
    writeFileSync(join(repo, "pkg", "CLAUDE.md"), "Package rule: run npm test.\n");
    writeFileSync(join(repo, "pkg", "deep", "AGENTS.md"), `Deep rule.\n${"detail line\n".repeat(400)}`);
    plugin = launchPlugin({ executable: MAIN, name: "project-context", isolation });
  });

  afterAll(async () => {
    await plugin.close();
    rmSync(repo, { recursive: true, force: true });
  });

  const client = () => plugin.host.client(ContextService);
  const text = (s: ContextSection) =>
    s.content[0]?.block.case === "text" ? s.content[0].block.value.text : "";

  describe("project-context", () => {
    it("describes itself as a static, non-compacting context provider", async () => {
      expect(plugin.host.isolation).toBe(isolation);
      const caps = (await client().getCapabilities({})).capabilities!;
      expect(caps).toMatchObject({
        stability: Stability.STATIC,
        compactor: false,
        defaultTokenBudget: 8000n,
      });
      expect(caps.configSchema?.attributes.map((a) => a.name)).toEqual([
        "base_instructions",
        "extra_instructions",
        "file_names",
        "extra_files",
      ]);
      const d = await client().describe({});
      expect(d.producer).toMatchObject({ name: "project-context", category: PluginCategory.CONTEXT });
    });

    it("appends base instructions and the convention files from the repository root down", async () => {
      const prior = {
        provider: "other",
        label: "Earlier",
        content: [{ block: { case: "text" as const, value: { text: "x" } } }],
        tokens: 1n,
      };
      const before = plugin.kernel.countTokensCalls;
      const res = await client().contribute({
        sessionId: "s1",
        turnId: "t1",
        tokenBudget: 100_000n,
        workingDirectory: join(repo, "pkg"),
        priorSections: [prior],
      });
      expect(res.sections.map((s) => `${s.provider}:${s.label}`)).toEqual([
        "other:Earlier",
        "project-context:Base instructions",
        "project-context:AGENTS.md",
        "project-context:pkg/CLAUDE.md",
      ]);
      const [, base, root, pkg] = res.sections as [
        ContextSection,
        ContextSection,
        ContextSection,
        ContextSection,
      ];
      expect(text(base)).toMatch(/coding agent/);
      expect(text(root)).toBe("# Repo rules\n\nUse tabs.");
      expect(text(pkg)).toBe("Package rule: run npm test.");
      for (const s of [base, root, pkg]) {
        // Counted by the kernel (here its fallback formula), never estimated locally.
        expect(Number(s.tokens)).toBe(fallbackTokenCount([text(s)]));
        expect(s).toMatchObject({ stability: Stability.STATIC, truncated: false });
      }
      expect(plugin.kernel.countTokensCalls).toBeGreaterThan(before);
    });

    it("loads the convention files of directories the session has touched files in, just in time", async () => {
      const labels = async (workingDirectory: string, filesTouched: string[]) =>
        (
          await client().contribute({
            sessionId: "s1",
            turnId: "t1",
            tokenBudget: 100_000n,
            workingDirectory,
            filesTouched,
          })
        ).sections.map((s) => s.label);
      expect(await labels(repo, [])).toEqual(["Base instructions", "AGENTS.md"]);
      expect(await labels(repo, ["pkg/deep/util.ts"])).toEqual([
        "Base instructions",
        "AGENTS.md",
        "pkg/CLAUDE.md",
        "pkg/deep/AGENTS.md",
      ]);
      // Already in the working directory's chain: not repeated; outside the repository: ignored.
      expect(await labels(join(repo, "pkg"), ["deep/a.ts", "/elsewhere/b.ts"])).toEqual([
        "Base instructions",
        "AGENTS.md",
        "pkg/CLAUDE.md",
        "pkg/deep/AGENTS.md",
      ]);
    });

    it("asks the kernel once per model and text for an exact count, every time for an estimate", async () => {
      const request = (id?: string) => ({
        sessionId: "s1",
        turnId: "t1",
        tokenBudget: 100_000n,
        workingDirectory: join(repo, "pkg"),
        ...(id
          ? { modelTarget: { provider: "m", id, contextWindow: 100_000n, effectiveCeiling: 90_000n } }
          : {}),
      });
      const calls = async (id?: string) => {
        const before = plugin.kernel.countTokensCalls;
        const res = await client().contribute(request(id));
        expect(res.sections.map((s) => s.label)).toEqual(["Base instructions", "AGENTS.md", "pkg/CLAUDE.md"]);
        return plugin.kernel.countTokensCalls - before;
      };
      // Estimates (the kernel's fallback) are asked for again each time.
      expect(await calls("estimated")).toBe(3);
      expect(await calls("estimated")).toBe(3);
      plugin.kernel.exactCounts = true;
      try {
        expect(await calls("exact")).toBe(3);
        expect(await calls("exact")).toBe(0);
        // Another model has its own tokenizer.
        expect(await calls("other")).toBe(3);
        // Without a named model the kernel counts for the session's model: never reused.
        expect(await calls()).toBe(3);
        expect(await calls()).toBe(3);
      } finally {
        plugin.kernel.exactCounts = false;
      }
    });

    it("fits its sections into token_budget, cutting the one that crosses it", async () => {
      const budget = 600;
      const res = await client().contribute({
        sessionId: "s1",
        turnId: "t2",
        tokenBudget: BigInt(budget),
        workingDirectory: join(repo, "pkg", "deep"),
      });
      const own = res.sections.filter((s) => s.provider === "project-context");
      const total = own.reduce((n, s) => n + Number(s.tokens), 0);
      expect(total).toBeLessThanOrEqual(budget);
      const deep = own.find((s) => s.label === "pkg/deep/AGENTS.md");
      // The nearest file comes right after the base instructions in priority.
      expect(deep?.truncated).toBe(true);
      expect(text(deep!)).toMatch(/\[truncated to fit the context budget\]$/);
      expect(Number(deep!.tokens)).toBe(fallbackTokenCount([text(deep!)]));
      expect(own.some((s) => s.label === "AGENTS.md")).toBe(false);
    });

    it("contributes only the base instructions without a working directory, nothing with no budget left", async () => {
      const res = await client().contribute({ sessionId: "s1", turnId: "t3", tokenBudget: 100_000n });
      expect(res.sections.map((s) => s.label)).toEqual(["Base instructions"]);
      const none = await client().contribute({
        sessionId: "s1",
        turnId: "t4",
        tokenBudget: 10n,
        workingDirectory: repo,
      });
      expect(none.sections).toEqual([]);
    });

    it("validates its configuration, rejecting declared files that do not exist", async () => {
      const bad = await client().configure({ config: { extra_files: [join(repo, "missing.md")] } });
      expect(bad.result?.diagnostics.map((d) => d.severity)).toEqual([DiagnosticSeverity.ERROR]);
      const ok = await client().configure({
        config: {
          base_instructions: false,
          file_names: ["CLAUDE.md"],
          extra_files: [join(repo, "AGENTS.md")],
        },
      });
      expect(ok.result?.diagnostics).toEqual([]);
      const res = await client().contribute({
        sessionId: "s1",
        turnId: "t5",
        tokenBudget: 100_000n,
        workingDirectory: join(repo, "pkg"),
      });
      expect(res.sections.map((s) => s.label)).toEqual(["pkg/CLAUDE.md", join(repo, "AGENTS.md")]);
    });
  });
});
