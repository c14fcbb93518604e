import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  defaultSessionsDir,
  InvalidArgumentError,
  isSessionId,
  newUlid,
  sessionFilePath,
} from "../src/index.ts";

describe("file layout", () => {
  it("uses $XDG_STATE_HOME/agent/sessions", () => {
    expect(defaultSessionsDir({ XDG_STATE_HOME: "/var/x" }, "/home/u")).toBe("/var/x/agent/sessions");
  });

  it("falls back to ~/.local/state when the variable is unset, empty or relative", () => {
    const fallback = "/home/u/.local/state/agent/sessions";
    expect(defaultSessionsDir({}, "/home/u")).toBe(fallback);
    expect(defaultSessionsDir({ XDG_STATE_HOME: "" }, "/home/u")).toBe(fallback);
    expect(defaultSessionsDir({ XDG_STATE_HOME: "rel/dir" }, "/home/u")).toBe(fallback);
  });

  it("names files <session_id>.sqlite and accepts only canonical ULIDs", () => {
    const id = newUlid();
    expect(sessionFilePath("/d", id)).toBe(join("/d", `${id}.sqlite`));
    for (const bad of ["../etc/passwd", id.toLowerCase(), `${id}x`, "", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"]) {
      expect(isSessionId(bad)).toBe(false);
      expect(() => sessionFilePath("/d", bad)).toThrow(InvalidArgumentError);
    }
  });

  it("mints ids whose lexical order is creation order, even within one millisecond", () => {
    const ids = Array.from({ length: 500 }, () => newUlid());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
