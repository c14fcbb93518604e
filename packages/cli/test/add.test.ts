// `agent add`'s pure parts: what a name or address adds, the commented provider block,
// and the "did you mean" for a misspelled first-party name.
import { AttributeType, type ConfigAttribute } from "@pluggableharness/protocol/config";
import { describe, expect, it } from "vitest";
import { providerBlock, wantedProvider } from "../src/commands/add.ts";
import { closest } from "../src/suggest.ts";

describe("wantedProvider", () => {
  it("names first-party providers by name or address, forge ones by their repository", () => {
    expect(wantedProvider("git")).toEqual({
      name: "git",
      source: "github.com/pluggableharness/provider-git",
    });
    expect(wantedProvider("pluggableharness/lsp").name).toBe("lsp");
    expect(wantedProvider("github.com/acme/provider-jira")).toEqual({
      name: "jira",
      source: "github.com/acme/provider-jira",
    });
    expect(wantedProvider("https://github.com/acme/provider-jira.git").source).toBe(
      "github.com/acme/provider-jira",
    );
    expect(wantedProvider("gitlab.com/a/b/provider-x", "mine").name).toBe("mine");
  });

  it("refuses unknown names with a suggestion, and MCP servers", () => {
    expect(() => wantedProvider("gti")).toThrow('did you mean "git"?');
    expect(() => wantedProvider("filesytem")).toThrow('did you mean "filesystem"?');
    expect(() => wantedProvider("zzzzzz")).toThrow(/no first-party provider is called "zzzzzz"\.\n/);
    expect(() => wantedProvider("mcp")).toThrow("agent mcp add");
  });
});

describe("closest", () => {
  it("suggests only near names", () => {
    expect(closest("widget", ["widgets", "web"])).toBe("widgets");
    expect(closest("anthropc", ["anthropic", "openai"])).toBe("anthropic");
    expect(closest("kubernetes", ["git", "exec"])).toBeUndefined();
  });
});

const attr = (a: Partial<ConfigAttribute> & { name: string }): ConfigAttribute =>
  ({
    type: AttributeType.STRING,
    required: false,
    sensitive: false,
    description: "",
    objectAttributes: [],
    path: false,
    ...a,
  }) as ConfigAttribute;

describe("providerBlock", () => {
  it("comments optional options with their default, and fills in known required ones", () => {
    const { text, toSet } = providerBlock("acme", [
      attr({ name: "api_key", required: true, sensitive: true, description: "The key." }),
      attr({ name: "roots", type: AttributeType.LIST_STRING, required: true, path: true }),
      attr({ name: "endpoint", required: true, description: "Where it listens." }),
      attr({ name: "retries", type: AttributeType.NUMBER, defaultJson: "3", description: "Tries." }),
    ]);
    expect(text).toBe(
      [
        'provider "acme" {',
        "  # The key.",
        '  api_key = env("ACME_API_KEY")',
        "",
        "  # roots.",
        '  roots = ["."]',
        "",
        "  # Where it listens.",
        "  # Required: set it before `agent run`.",
        '  endpoint = ""',
        "",
        "  # Tries.",
        "  # retries = 3",
        "}",
        "",
      ].join("\n"),
    );
    expect(toSet).toEqual(["endpoint"]);
    expect(
      providerBlock("acme", [attr({ name: "api_key", required: true, sensitive: true })]).variables,
    ).toEqual(["ACME_API_KEY"]);
    expect(providerBlock("empty", []).text).toBe('provider "empty" {}\n');
  });
});
