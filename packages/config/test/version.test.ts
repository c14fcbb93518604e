// Terraform-style version constraints against version lists.

import { describe, expect, it } from "vitest";
import { parseConstraints, satisfies, selectVersion, type VersionConstraint } from "../src/index.ts";

function c(text: string): VersionConstraint[] {
  const r = parseConstraints(text);
  if ("error" in r) throw new Error(r.error.message);
  return r.constraints;
}

const VERSIONS = [
  "0.9.0",
  "1.0.0",
  "1.1.0",
  "1.2.0",
  "1.2.3",
  "1.2.4",
  "1.2.10",
  "1.3.0",
  "1.10.0",
  "2.0.0",
  "2.1.0-beta.1",
  "2.1.0",
];
const accepted = (text: string) => VERSIONS.filter((v) => satisfies(v, c(text)));

describe("constraint semantics", () => {
  it.each([
    ["1.2.3", ["1.2.3"]],
    ["= 1.2.3", ["1.2.3"]],
    ["=1.2", ["1.2.0"]],
    ["!= 1.2.3", VERSIONS.filter((v) => v !== "1.2.3" && !v.includes("-"))],
    ["> 1.2.3", ["1.2.4", "1.2.10", "1.3.0", "1.10.0", "2.0.0", "2.1.0"]],
    [">= 1.2.3", ["1.2.3", "1.2.4", "1.2.10", "1.3.0", "1.10.0", "2.0.0", "2.1.0"]],
    ["< 1.2", ["0.9.0", "1.0.0", "1.1.0"]],
    ["<= 1.2", ["0.9.0", "1.0.0", "1.1.0", "1.2.0"]],
    ["~> 1.2.3", ["1.2.3", "1.2.4", "1.2.10"]],
    ["~> 1.2", ["1.2.0", "1.2.3", "1.2.4", "1.2.10", "1.3.0", "1.10.0"]],
    ["~> 1", ["1.0.0", "1.1.0", "1.2.0", "1.2.3", "1.2.4", "1.2.10", "1.3.0", "1.10.0"]],
    ["~> 0.9", ["0.9.0"]],
    [">= 1.0, < 2.0, != 1.2.3", ["1.0.0", "1.1.0", "1.2.0", "1.2.4", "1.2.10", "1.3.0", "1.10.0"]],
    ["~> 1.2, != 1.2.4", ["1.2.0", "1.2.3", "1.2.10", "1.3.0", "1.10.0"]],
  ])("%s", (text, expected) => {
    expect(accepted(text)).toEqual(expected);
  });

  it("distinguishes ~> 1.2 from ~> 1.2.3", () => {
    expect(satisfies("1.3.0", c("~> 1.2"))).toBe(true);
    expect(satisfies("1.3.0", c("~> 1.2.3"))).toBe(false);
    expect(satisfies("1.2.2", c("~> 1.2"))).toBe(true);
    expect(satisfies("1.2.2", c("~> 1.2.3"))).toBe(false);
  });

  it("selects a pre-release only through an exact constraint naming it", () => {
    expect(satisfies("2.1.0-beta.1", c(">= 2.0"))).toBe(false);
    expect(satisfies("2.1.0-beta.1", c("~> 2.1"))).toBe(false);
    expect(satisfies("2.1.0-beta.1", c("= 2.1.0-beta.1"))).toBe(true);
    expect(satisfies("2.1.0-beta.1", c("2.1.0-beta.1, < 2.0"))).toBe(false);
  });

  it("selects the newest acceptable version", () => {
    expect(selectVersion(VERSIONS, c("~> 1.2.3"))).toBe("1.2.10");
    expect(selectVersion(VERSIONS, c("~> 1.2"))).toBe("1.10.0");
    expect(selectVersion(["v1.0.0", "v1.4.2", "not-a-version"], c("~> 1.0"))).toBe("v1.4.2");
    expect(selectVersion(VERSIONS, c("> 5"))).toBeUndefined();
  });
});

describe("constraint syntax errors", () => {
  it.each([
    ["", 0, "cannot be empty"],
    ["  ", 2, "cannot be empty"],
    ["~> 1.x", 3, "not a version"],
    ["=> 1.0", 0, "unknown operator"],
    [">= 1.0,, < 2", 7, "Empty constraint"],
    [">= 1.0,", 7, "Empty constraint"],
    ["v1.2", 0, "does not start with"],
    ["= v1.2", 2, "not a version"],
    ["~>", 2, "not a version"],
    ["1.2.3.4", 0, "not a version"],
    ["01.2", 0, "not a version"],
  ])("%j fails at offset %i", (text, offset, message) => {
    const r = parseConstraints(text);
    expect("error" in r).toBe(true);
    if (!("error" in r)) return;
    expect(r.error.offset).toBe(offset);
    expect(r.error.message).toContain(message);
  });

  it("parses every operator", () => {
    expect(c("= 1, != 2, > 3, >= 4, < 5, <= 6, ~> 7.1").map((x) => [x.op, x.version, x.parts])).toEqual([
      ["=", "1.0.0", 1],
      ["!=", "2.0.0", 1],
      [">", "3.0.0", 1],
      [">=", "4.0.0", 1],
      ["<", "5.0.0", 1],
      ["<=", "6.0.0", 1],
      ["~>", "7.1.0", 2],
    ]);
  });
});
