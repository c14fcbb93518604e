// base_url over plain http to another machine draws one warning, the same in every provider.
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { describe, expect, it } from "vitest";
import { isLoopback, plainHttpWarning } from "../src/index.ts";

describe("plain http base_url", () => {
  it("treats only this machine as loopback", () => {
    for (const url of [
      "http://localhost:11434",
      "http://api.localhost",
      "http://127.0.0.9:8",
      "http://[::1]:80",
    ])
      expect(isLoopback(url), url).toBe(true);
    for (const url of ["http://localhost.example.com", "http://10.0.0.1", "http://128.0.0.1", "not a url"])
      expect(isLoopback(url), url).toBe(false);
  });

  it("warns for http to another host, never for https, loopback or an unset value", () => {
    const warning = plainHttpWarning("http://models.example.com/v1");
    expect(warning).toMatchObject({ severity: DiagnosticSeverity.WARNING, attributePath: ["base_url"] });
    expect(warning?.detail).toMatch(/unencrypted/);
    for (const value of ["https://models.example.com", "http://127.0.0.1:8787", undefined, 42])
      expect(plainHttpWarning(value), String(value)).toBeUndefined();
  });
});
