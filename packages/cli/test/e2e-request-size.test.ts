// What every request repeats (issue 32, point 4): the system prompt, the context providers'
// blocks and the tool declarations of a zero-config project. The richest zero-config case is
// a git repository (the git tools join the profile), so that is the one measured. The real
// binary, real plugins, the loopback fake Anthropic; tokens are bytes / 4 of the JSON sent.
// Budgets and how they were set: docs/decisions/performance.md, "Request size".
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";
import { formatRequestSize, measureRequest } from "./request-size.ts";

/**
 * System blocks plus tool declarations, zero-config git repository: 4,108 when set (7,830
 * before), plus ~2% for what varies between machines (the repository path and the tree).
 */
const FIXED_BUDGET_TOKENS = 4_200;
/** Base instructions alone (247 when set; 415 before). */
const BASE_INSTRUCTIONS_BUDGET_TOKENS = 260;
/** Longest tool description; the apply_patch format (379) and the sub-agent profiles fit. */
const DESCRIPTION_MAX_CHARS = 400;

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

interface Body {
  system: { text: string; cache_control?: unknown }[];
  tools: { name: string; description: string; cache_control?: unknown }[];
}

describe("the first request of a zero-config project", () => {
  it("stays within the token budget, with short descriptions and its cache breakpoints", async () => {
    const repo = sb.repo("zero-config");
    rmSync(join(repo, "agent.hcl"));
    execFileSync("git", ["init", "-q", repo]);
    fake.push({ kind: "text", text: "Hello." });

    const r = await agent(["run", "-p", "hi"], {
      cwd: repo,
      env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: fake.url },
    });
    expect(r.code, r.stderr).toBe(0);

    const first = fake.requests.find((q) => q.endpoint === "messages");
    expect(first).toBeDefined();
    const m = measureRequest(first!.bodyText);
    console.log(formatRequestSize(m));

    // The profile is all there: cuts came from text, not from dropping tools.
    const names = m.tools.map((t) => t.name);
    for (const tool of ["filesystem__edit_file", "search__grep", "exec__bash", "git__git_diff"]) {
      expect(names).toContain(tool);
    }
    expect(m.fixedTokens).toBeLessThanOrEqual(FIXED_BUDGET_TOKENS);
    expect(m.system[0]!.head).toMatch(/^You are a coding agent/);
    expect(m.system[0]!.tokens).toBeLessThanOrEqual(BASE_INSTRUCTIONS_BUDGET_TOKENS);
    const long = m.tools.filter((t) => t.descriptionChars > DESCRIPTION_MAX_CHARS);
    expect(long.map((t) => `${t.name}: ${t.descriptionChars} chars`)).toEqual([]);

    // Cache breakpoints: the last system block and the last tool stay marked, so the
    // shorter prefix is still cached as one piece.
    const body = first!.json as Body;
    expect(body.system.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    expect(body.tools.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
  }, 120_000);
});
