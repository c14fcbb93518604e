import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readConfig } from "../src/config.ts";
import { Jail } from "../src/jail.ts";
import { KeyedMutex } from "../src/mutex.ts";
import { checkValue, s, toWireSchema } from "../src/schema.ts";
import { looksBinary, truncateUtf8 } from "../src/text.ts";

describe("schemas", () => {
  const schema = s.object(
    {
      path: s.string("p"),
      mode: s.string("m", ["a", "b"]),
      n: s.integer(),
      list: s.array(s.object({ x: s.boolean() }, ["x"])),
    },
    ["path"],
  );

  it("converts to the wire subset in declaration order", () => {
    const wire = toWireSchema(schema);
    expect(wire.type).toBe(SchemaType.OBJECT);
    expect(wire.properties?.map((p) => p.name)).toEqual(["path", "mode", "n", "list"]);
    expect(wire.required).toEqual(["path"]);
    expect(wire.properties?.[1]?.schema?.enum).toHaveLength(2);
  });

  it("reports every problem with its path", () => {
    expect(checkValue(schema, { path: "x", mode: "a", n: 2, list: [{ x: true }] })).toEqual([]);
    expect(checkValue(schema, { mode: "c", n: 1.5, list: [{}] })).toEqual([
      "arguments.path: is required",
      'arguments.mode: must be one of "a", "b"',
      "arguments.n: expected an integer",
      "arguments.list[0].x: is required",
    ]);
    expect(checkValue(schema, [])).toEqual(["arguments: expected an object, got array"]);
  });
});

describe("config", () => {
  it("fills defaults and reports missing, mistyped and unknown attributes without quoting secrets", () => {
    const fields = [
      { name: "roots", type: "list_string", required: true, description: "" },
      { name: "limit", type: "number", default: 5, description: "" },
      { name: "key", type: "string", sensitive: true, description: "" },
    ] as const;
    expect(readConfig(fields, { roots: ["/"] })).toEqual({
      values: { roots: ["/"], limit: 5 },
      diagnostics: [],
    });
    const bad = readConfig(fields, { key: 123456789, extra: 1 });
    expect(bad.diagnostics.map((d) => d.summary)).toEqual([
      'Unsupported attribute "extra"',
      'Missing required attribute "roots"',
      'Attribute "key" must be a string',
    ]);
    expect(JSON.stringify(bad.diagnostics)).not.toContain("123456789");
  });
});

describe("Jail", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ph-jail-")));
    mkdirSync(join(base, "root/a"), { recursive: true });
    mkdirSync(join(base, "out"));
    symlinkSync(join(base, "out"), join(base, "root/out-link"));
    symlinkSync(join(base, "root/a"), join(base, "alias"));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("resolves inside, refuses outside, and accepts a root reached through a link", async () => {
    const jail = await Jail.create([join(base, "root")]);
    const inside = await jail.resolve("a/../a/new.txt", join(base, "root"));
    expect(inside).toMatchObject({
      real: join(base, "root/a/new.txt"),
      relative: "a/new.txt",
      exists: false,
    });
    await expect(jail.resolve("out-link/x", join(base, "root"))).rejects.toMatchObject({
      category: "permission_denied",
    });
    await expect(jail.resolve("../out", join(base, "root"))).rejects.toMatchObject({
      category: "permission_denied",
    });
    expect((await jail.resolve(join(base, "alias", "f"), undefined)).real).toBe(join(base, "root/a/f"));
    await expect(Jail.create(["relative"])).rejects.toThrow(/absolute/);
    await expect(Jail.create([join(base, "missing")])).rejects.toThrow(/does not exist/);
  });
});

describe("KeyedMutex", () => {
  it("serializes one key and lets different keys overlap", async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    let releaseA!: () => void;
    const gate = new Promise<void>((r) => {
      releaseA = r;
    });
    const a1 = m.run("a", async () => {
      log.push("a1 start");
      await gate;
      log.push("a1 end");
    });
    const a2 = m.run("a", async () => {
      log.push("a2 start");
    });
    const b = m.run("b", async () => {
      log.push("b start");
    });
    await b;
    expect(log).toEqual(["a1 start", "b start"]);
    releaseA();
    await Promise.all([a1, a2]);
    expect(log).toEqual(["a1 start", "b start", "a1 end", "a2 start"]);
    expect(m.size).toBe(0);
  });
});

describe("text", () => {
  it("detects binary content and cuts UTF-8 on character boundaries", () => {
    expect(looksBinary(Buffer.from("hello\n"))).toBe(false);
    expect(looksBinary(Buffer.from([104, 0, 105]))).toBe(true);
    expect(truncateUtf8("héllo", 2)).toEqual({ text: "h", truncated: true });
    expect(truncateUtf8("abc", 5)).toEqual({ text: "abc", truncated: false });
  });
});
