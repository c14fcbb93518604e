import { CodedError } from "@pluggableharness/protocol/coded-error";
import { describe, expect, it } from "vitest";

class DemoError extends CodedError<"a" | "b"> {
  override readonly name = "DemoError";
  get reason(): "a" | "b" {
    return this.code;
  }
}

describe("CodedError", () => {
  it("carries its code, message, cause and the subclass's name", () => {
    const cause = new Error("root");
    const err = new DemoError("b", "went wrong", { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(CodedError);
    expect(err.code).toBe("b");
    expect(err.reason).toBe("b");
    expect(err.message).toBe("went wrong");
    expect(err.cause).toBe(cause);
    expect(err.name).toBe("DemoError");
    expect(String(err)).toBe("DemoError: went wrong");
  });

  it("accepts numeric codes", () => {
    expect(new CodedError(5, "x").code).toBe(5);
  });
});
