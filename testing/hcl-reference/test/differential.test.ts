// packages/hcl against HashiCorp's hcl/v2 (Debian's golang-github-hashicorp-hcl-v2-dev,
// built with Debian's Go in GOPATH mode): every input of the corpus must get the
// same answer from both, or a difference the allowlist documents. In CI the
// toolchain is always there (.ci/run installs it); elsewhere the test needs it.

import { readdirSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { ALLOWLIST } from "../src/allowlist.ts";
import { compareResults } from "../src/compare.ts";
import { STANDARD_ENV, STANDARD_VARIABLES } from "../src/corpus.ts";
import { ours } from "../src/ours.ts";
import {
  buildReference,
  findToolchain,
  type RefResult,
  runReference,
  type Toolchain,
} from "../src/reference.ts";
import { type DifferentialReport, runDifferential } from "../src/run.ts";

const found = findToolchain();
const skip = !process.env["CI"] && "missing" in found;
const enc = new TextEncoder();

describe.skipIf(skip)("packages/hcl agrees with hcl/v2", () => {
  let toolchain: Toolchain;
  let report: DifferentialReport;

  beforeAll(async () => {
    if ("missing" in found) throw new Error(`hcl differential: ${found.missing} (installed by .ci/run)`);
    toolchain = found;
    report = await runDifferential(toolchain);
  }, 180_000);

  it("compares the spec suite, the upstream test inputs, our fixtures, the identifier inputs and 3000 generated inputs", () => {
    const fixtures = readdirSync(new URL("../../../packages/hcl/test/fixtures/", import.meta.url)).filter(
      (f) => f.endsWith(".hcl"),
    ).length;
    expect(report.inputs.spec).toBeGreaterThanOrEqual(40);
    expect(report.inputs.upstream).toBeGreaterThanOrEqual(250);
    expect(report.inputs.fixtures).toBe(fixtures);
    expect(report.inputs.identifiers).toBe(136);
    expect(report.inputs.generated).toBe(3000);
    expect(toolchain.hclVersion).toMatch(/^2\.14\./);
  });

  it("finds no disagreement that the allowlist does not explain", () => {
    const unexplained = report.findings
      .filter((f) => f.explainedBy === undefined)
      .map(
        (f) =>
          `${f.input.id} ${f.disagreement.kind} ${f.disagreement.path}\n  reference: ${f.disagreement.reference}\n  ours:      ${f.disagreement.ours}`,
      );
    expect(unexplained.join("\n")).toBe("");
    expect(report.unexplainedInputs).toBe(0);
  });

  it("uses every allowlist entry, so none outlives the difference it documents", () => {
    for (const entry of ALLOWLIST) expect(report.explainedBy[entry.id] ?? 0, entry.id).toBeGreaterThan(0);
  });

  it("notices a disagreement: the reference and packages/hcl are really compared", async () => {
    const bin = buildReference(toolchain);
    const input = (text: string) => ({
      id: text,
      bytes: enc.encode(text),
      variables: STANDARD_VARIABLES,
      env: STANDARD_ENV,
    });
    const [unified, inconsistent, rejected] = (await runReference(bin, [
      input('a = t ? 5 : "x"\n'),
      input("a = t ? 1 : true\n"),
      input("a = x.0.1\n"),
    ])) as [RefResult, RefResult, RefResult];
    const first = (r: RefResult) => r.body?.[0];
    expect(first(unified)).toMatchObject({ attr: "a", value: "5" });
    expect(first(inconsistent)).toMatchObject({
      diags: [{ summary: "Inconsistent conditional result types" }],
    });
    expect(rejected.diags[0]).toMatchObject({ summary: "Invalid legacy index syntax", from: [1, 7, 6] });
    // Our answers agree...
    for (const r of [unified, inconsistent, rejected]) {
      expect(compareResults(r, ours(input(r.id)))).toEqual([]);
    }
    // ...and a changed one does not.
    const wrong = ours(input('a = t ? 5 : "x"\n'));
    const attr = wrong.body[0]!;
    if ("attr" in attr) attr.value = 5;
    expect(compareResults(unified, wrong).map((d) => d.kind)).toEqual(["value"]);
    const moved = ours(input("a = x.0.1\n"));
    moved.diags[0]!.from = [1, 8, 7];
    expect(compareResults(rejected, moved).map((d) => d.kind)).toEqual(["first-error"]);
  });
});
