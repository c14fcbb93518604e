// Structural rules for every pluggableharness.* contract, checked on the generated
// descriptors: every service is described, every enum starts at a prefixed
// *_UNSPECIFIED, the shared RPC shapes are identical across categories, and every
// message (the seed messages included) survives a binary and a JSON round trip fully
// populated, compared field by field.
import {
  type DescEnum,
  type DescFile,
  type DescMessage,
  type DescService,
  equals,
  fromBinary,
  fromJson,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { nestedTypes, reflect } from "@bufbuild/protobuf/reflect";
import { describe, expect, it } from "vitest";
import { allFiles } from "../src/gen/registry.ts";
import { RenderNodeSchema } from "../src/gen/render.ts";
import { populate, populateVariants, variantCount } from "./populate.ts";

const files: DescFile[] = allFiles.filter((f) => f.name.startsWith("pluggableharness/"));

function typesOf<K extends "message" | "enum" | "service">(kind: K) {
  type T = K extends "message" ? DescMessage : K extends "enum" ? DescEnum : DescService;
  const out: T[] = [];
  for (const file of files) {
    for (const t of nestedTypes(file)) if (t.kind === kind) out.push(t as T);
  }
  return out;
}

const messages = typesOf("message").filter((m) => !m.proto.options?.mapEntry);
const enums = typesOf("enum");
const services = typesOf("service");

/** "FrontendErrorCategory" -> "FRONTEND_ERROR_CATEGORY". */
function enumPrefix(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
}

function method(service: DescService, name: string) {
  const m = service.methods.find((x) => x.name === name);
  if (!m) throw new Error(`${service.typeName} has no ${name} method`);
  return m;
}

describe("contract services", () => {
  it("are the six category services plus hook subscription and kernel callbacks", () => {
    expect(services.map((s) => s.typeName).sort()).toEqual([
      "pluggableharness.context.v1.ContextService",
      "pluggableharness.frontend.v1.FrontendService",
      "pluggableharness.hook.v1.HookSubscriberService",
      "pluggableharness.kernel.v1.KernelCallbackService",
      "pluggableharness.memory.v1.MemoryService",
      "pluggableharness.model.v1.ModelService",
      "pluggableharness.tool.v1.ToolService",
      "pluggableharness.widget.v1.WidgetService",
    ]);
  });

  it.each(services.map((s) => [s.typeName, s] as const))(
    "%s has a unary Describe returning a ProducerRef",
    (_, s) => {
      const describeRpc = method(s, "Describe");
      expect(describeRpc.methodKind).toBe("unary");
      expect(describeRpc.input.fields).toHaveLength(0);
      const producer = describeRpc.output.field["producer"];
      expect(producer?.number).toBe(1);
      expect(producer?.fieldKind).toBe("message");
      expect(producer?.message?.typeName).toBe("pluggableharness.common.v1.ProducerRef");
    },
  );

  const categoryServices = services.filter((s) => s.methods.some((m) => m.name === "Configure"));

  it.each(categoryServices.map((s) => [s.typeName, s] as const))(
    "%s has the shared Configure shape",
    (_, s) => {
      const configure = method(s, "Configure");
      expect(configure.methodKind).toBe("unary");
      const config = configure.input.field["config"];
      expect(config?.number).toBe(1);
      expect(config?.message?.typeName).toBe("google.protobuf.Struct");
      const result = configure.output.field["result"];
      expect(result?.number).toBe(1);
      expect(result?.message?.typeName).toBe("pluggableharness.config.v1.ConfigureResult");
    },
  );

  it.each(categoryServices.map((s) => [s.typeName, s] as const))(
    "%s declares a config_schema in its capabilities",
    (_, s) => {
      // Tool providers answer GetSchema with the capability fields inline.
      const caps = s.methods.some((m) => m.name === "GetSchema")
        ? method(s, "GetSchema").output
        : method(s, "GetCapabilities").output.field["capabilities"]?.message;
      const byName = (name: string) => caps?.fields.find((f) => f.name === name);
      expect(byName("config_schema")?.message?.typeName).toBe("pluggableharness.config.v1.ConfigSchema");
      expect(byName("supported_hook_points")?.enum?.typeName).toBe("pluggableharness.common.v1.HookPoint");
    },
  );

  it("gives every category with Render the shared Render shape", () => {
    for (const s of services.filter((x) => x.methods.some((m) => m.name === "Render"))) {
      const render = method(s, "Render");
      const shape = render.input.fields.map((f) => [
        f.name,
        f.number,
        f.fieldKind === "scalar" ? f.scalar : -1,
      ]);
      expect(shape, s.typeName).toEqual([
        ["kind", 1, 9 /* STRING */],
        ["payload", 2, 12 /* BYTES */],
        ["schema_version", 3, 9 /* STRING */],
      ]);
      const tree = render.output.field["tree"];
      expect(tree?.message?.typeName).toBe("pluggableharness.render.v1.RenderTree");
    }
    expect(
      services
        .filter((x) => x.methods.some((m) => m.name === "Render"))
        .map((s) => s.name)
        .sort(),
    ).toEqual(["ContextService", "MemoryService", "ModelService", "ToolService"]);
  });

  it("streams the frontend Attach both ways and the widget Attach server-side only", () => {
    const frontend = services.find((s) => s.name === "FrontendService")!;
    const widget = services.find((s) => s.name === "WidgetService")!;
    expect(method(frontend, "Attach").methodKind).toBe("bidi_streaming");
    expect(method(widget, "Attach").methodKind).toBe("server_streaming");
  });
});

describe("contract enums", () => {
  it("exist", () => {
    expect(enums.length).toBeGreaterThanOrEqual(35);
  });

  it.each(enums.map((e) => [e.typeName, e] as const))("%s starts at a prefixed *_UNSPECIFIED = 0", (_, e) => {
    const prefix = enumPrefix(e.name);
    expect(e.values[0]?.number).toBe(0);
    expect(e.values[0]?.name).toBe(`${prefix}_UNSPECIFIED`);
    for (const v of e.values) expect(v.name.startsWith(`${prefix}_`), v.name).toBe(true);
  });
});

describe("contract messages", () => {
  it("exist", () => {
    expect(messages.length).toBeGreaterThanOrEqual(200);
  });

  it.each(messages.map((m) => [m.typeName, m] as const))("%s round-trips fully populated", (_, desc) => {
    const instances = populateVariants(desc);
    const setSomewhere = new Set<string>();
    for (const msg of instances) {
      const r = reflect(desc, msg);
      for (const field of desc.fields) {
        if (r.isSet(field)) setSomewhere.add(field.name);
        else expect(field.oneof, `${field.name} unset outside a oneof`).toBeDefined();
      }
      const decoded = fromBinary(desc, toBinary(desc, msg));
      expect(equals(desc, decoded, msg)).toBe(true);
      const fromText = fromJson(desc, toJson(desc, msg));
      expect(equals(desc, fromText, msg)).toBe(true);
    }
    // Every field, oneof members included, was set in at least one instance.
    expect([...setSomewhere].sort()).toEqual(desc.fields.map((f) => f.name).sort());
  });
});

describe("populate", () => {
  it("exercises every RenderNode variant exactly once", () => {
    const cases = populateVariants(RenderNodeSchema).map((n) => n.node.case);
    expect(variantCount(RenderNodeSchema)).toBe(10);
    expect(new Set(cases).size).toBe(10);
    expect(cases).not.toContain(undefined);
  });

  it("produces instances that differ from the default and from each other", () => {
    const [a, b] = populateVariants(RenderNodeSchema);
    expect(equals(RenderNodeSchema, a!, b!)).toBe(false);
    const listNode = populate(RenderNodeSchema, 5);
    expect(listNode.node.case).toBe("list");
    // Recursion is cut off but still nests at least one level.
    if (listNode.node.case === "list") expect(listNode.node.value.items).toHaveLength(2);
  });
});
