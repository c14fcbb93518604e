// Contract facts the domain rules rely on, checked on the generated descriptors.
import { file_pluggableharness_content_v1_content } from "@pluggableharness/protocol/content";
import { ModelSpecSchema } from "@pluggableharness/protocol/model";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";

describe("wire shape", () => {
  it("RiskClass, ToolKind and ToolErrorCategory have a named unspecified zero value", () => {
    expect(RiskClass[0]).toBe("UNSPECIFIED");
    expect(ToolKind[0]).toBe("UNSPECIFIED");
    expect(ToolErrorCategory[0]).toBe("UNSPECIFIED");
  });

  it("content.v1 does not import model.v1", () => {
    const deps = file_pluggableharness_content_v1_content.dependencies.map((f) => f.name);
    expect(deps.some((d) => d.includes("model"))).toBe(false);
  });

  it("pricing, thinking and caching are message fields of ModelSpec, so absence is visible", () => {
    for (const name of ["pricing", "thinking", "caching"]) {
      expect(ModelSpecSchema.fields.find((f) => f.name === name)?.fieldKind).toBe("message");
    }
    expect(
      ModelSpecSchema.fields.find((f) => f.name === "supports_parallel_tool_calls")?.proto.proto3Optional,
    ).toBe(true);
  });
});
