// The runner against a plugin that breaks the rules, one that cannot start, and the CLI.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli.ts";
import { formatReport, runConformance } from "../src/index.ts";

const BAD = fileURLToPath(new URL("./fixtures/bad-tool.ts", import.meta.url));
const TASK = fileURLToPath(new URL("../../../providers/task/src/main.ts", import.meta.url));

describe("runConformance", () => {
  it("finds each violation of a broken tool provider and exits 1", async () => {
    const report = await runConformance({
      executable: BAD,
      samples: [
        { tool: "wrong_payload", arguments: {} },
        { tool: "two_terminals", arguments: {} },
        { tool: "read_only_resource", arguments: {}, cancel: true },
      ],
    });
    expect(report.exitCode).toBe(1);
    const failed = Object.fromEntries(
      report.results.filter((r) => r.status === "fail").map((r) => [r.id, r.reason]),
    );
    expect(failed["tool.schema.valid"]).toMatch(/resource-risk-not-read-only/);
    expect(failed["tool.invoke.wrong_payload.sample-1"]).toMatch(/output_schema/);
    expect(failed["tool.invoke.two_terminals.sample-1"]).toMatch(/single-terminal/);
    expect(failed["tool.invoke.unknown-operation"]).toMatch(/classified error/);
    expect(failed["tool.cancel.read_only_resource.sample-1"]).toMatch(/no cancellation report/);
    expect(report.results.find((r) => r.id === "tool.describe")?.status).toBe("pass");
    const text = formatReport(report);
    expect(text).toMatch(/^FAIL tool\.schema\.valid - /m);
    expect(text).toMatch(/result: violations found$/);
  });

  it("exits 2 when the plugin cannot be launched", async () => {
    const report = await runConformance({ executable: "/nonexistent/plugin" });
    expect(report.exitCode).toBe(2);
    expect(report.error).toMatch(/could not launch/);
    expect(report.results).toEqual([expect.objectContaining({ id: "launch", status: "fail" })]);
  });
});

describe("agent conform CLI entry", () => {
  it("prints a line per check and the outcome, returning the exit code", async () => {
    const out: string[] = [];
    const code = await main([TASK], { out: (l) => out.push(l), err: (l) => out.push(`ERR ${l}`) });
    expect(code).toBe(0);
    expect(out).toContain("PASS tool.describe - task 0.1.0 (github.com/pluggableharness/provider-task)");
    expect(out.at(-1)).toBe("result: conformant");
    expect(out.at(-2)).toMatch(/^conformance: \d+ passed, 0 failed, \d+ skipped$/);
  });

  it("runs the same checks with the plugin in a worker thread (--isolation worker)", async () => {
    const out: string[] = [];
    const code = await main([TASK, "--isolation", "worker"], {
      out: (l) => out.push(l),
      err: (l) => out.push(`ERR ${l}`),
    });
    expect(code).toBe(0);
    expect(out[0]).toBe("PASS launch - serves tool (in a worker thread)");
    expect(out.at(-1)).toBe("result: conformant");
    const bad: string[] = [];
    expect(await main([TASK, "--isolation", "thread"], { out: () => {}, err: (l) => bad.push(l) })).toBe(2);
    expect(bad[0]).toBe('agent conform: --isolation must be process or worker, not "thread"');
  });

  it("rejects bad usage with exit code 2", async () => {
    const err: string[] = [];
    expect(await main([], { out: () => {}, err: (l) => err.push(l) })).toBe(2);
    expect(err[0]).toBe("agent conform: missing the plugin executable");
    expect(await main(["x", "--config-json", "[1]"], { out: () => {}, err: () => {} })).toBe(2);
    const help: string[] = [];
    expect(await main(["--help"], { out: (l) => help.push(l), err: () => {} })).toBe(0);
    expect(help[0]).toMatch(/^usage: agent conform/);
  });
});
