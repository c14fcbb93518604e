import type { JsonObject } from "@bufbuild/protobuf";
import { RiskClass, ToolKind, type ToolSchema } from "@pluggableharness/protocol/tool";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ConcurrencyScheduler,
  concurrencyKey,
  type SchedulableCall,
  schedule,
  serializeAllFor,
} from "../../src/domain/scheduler.ts";
import { concurrencyModeOf, type ValidatedTool } from "../../src/domain/tool-schema.ts";
import { interactive, model, resource, tool, validated } from "./fixtures.ts";

/** Lets every pending promise callback run; no timers involved. */
const flush = () => new Promise<void>((r) => setImmediate(r));

interface Deferred {
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** Runs calls under a scheduler; each call stays running until the test finishes it. */
function harness(options: { serializeAll?: boolean } = {}) {
  const scheduler = new ConcurrencyScheduler(options);
  const running = new Set<string>();
  const started: string[] = [];
  const pending = new Map<string, Deferred>();
  const results: Promise<unknown>[] = [];
  const submit = (...calls: SchedulableCall[]) => {
    for (const call of calls) {
      const p = scheduler.submit(call, (c) => {
        running.add(c.id);
        started.push(c.id);
        return new Promise<string>((resolve, reject) => {
          pending.set(c.id, {
            resolve: () => {
              running.delete(c.id);
              resolve(c.id);
            },
            reject: (e) => {
              running.delete(c.id);
              reject(e);
            },
          });
        });
      });
      p.catch(() => {});
      results.push(p);
    }
  };
  const finish = async (id: string, fail = false) => {
    const d = pending.get(id);
    if (!d) throw new Error(`${id} is not running`);
    pending.delete(id);
    if (fail) d.reject(new Error("boom"));
    else d.resolve();
    await flush();
  };
  return { submit, finish, running, started, results };
}

function call(id: string, t: ValidatedTool, args: JsonObject = {}): SchedulableCall {
  return { id, tool: t, arguments: args };
}

const edit = validated(resource({ name: "edit_file" }), "fs");
const bash = validated(
  resource({ name: "bash", concurrency: { safe: false }, risk: RiskClass.HIGH }),
  "exec",
);
const search = validated(tool({ name: "web_search", concurrency: { safe: true } }), "web");

describe("turn-level tool-call concurrency (ConcurrencySpec)", () => {
  it("calls with distinct keys run concurrently", async () => {
    const h = harness();
    h.submit(call("1", edit, { path: "a.go" }), call("2", edit, { path: "b.go" }));
    await flush();
    expect([...h.running].sort()).toEqual(["1", "2"]);
  });

  it("calls sharing an identical key run one after another in declaration order", async () => {
    const h = harness();
    h.submit(
      call("1", edit, { path: "a.go" }),
      call("2", edit, { path: "a.go" }),
      call("3", edit, { path: "a.go" }),
    );
    await flush();
    expect([...h.running]).toEqual(["1"]);
    await h.finish("1");
    expect([...h.running]).toEqual(["2"]);
    await h.finish("2");
    expect([...h.running]).toEqual(["3"]);
    expect(h.started).toEqual(["1", "2", "3"]);
  });

  it("the key is the canonical value of key_fields", () => {
    expect(concurrencyKey("fs", "edit", ["path"], { path: { a: 1, b: 2 } })).toBe(
      concurrencyKey("fs", "edit", ["path"], { path: { b: 2, a: 1 } }),
    );
    expect(concurrencyKey("fs", "edit", ["path"], {})).not.toBe(
      concurrencyKey("fs", "edit", ["path"], { path: null }),
    );
    expect(concurrencyKey("fs", "edit", ["path"], { path: "a" })).not.toBe(
      concurrencyKey("fs", "write", ["path"], { path: "a" }),
    );
    expect(concurrencyKey("fs", "edit", ["path"], { path: "a" })).not.toBe(
      concurrencyKey("fs2", "edit", ["path"], { path: "a" }),
    );
  });

  it("safe: false takes a provider-wide lock", async () => {
    const other = validated(resource({ name: "bash_bg", concurrency: { safe: true } }), "exec");
    const h = harness();
    h.submit(call("1", bash, { cmd: "ls" }), call("2", other, {}), call("3", bash, { cmd: "pwd" }));
    await flush();
    expect([...h.running]).toEqual(["1"]);
    await h.finish("1");
    expect([...h.running]).toEqual(["2"]);
    await h.finish("2");
    expect([...h.running]).toEqual(["3"]);
  });

  it("absent ConcurrencySpec is scheduled like safe: false", async () => {
    const legacy = validated(resource({ name: "old", concurrency: undefined }), "legacy");
    expect(legacy.concurrency).toEqual({ kind: "provider_lock" });
    const h = harness();
    h.submit(call("1", legacy, { path: "a" }), call("2", legacy, { path: "b" }));
    await flush();
    expect([...h.running]).toEqual(["1"]);
  });

  it("safe: true without key_fields means every call is its own key", async () => {
    const h = harness();
    h.submit(call("1", search, { q: "x" }), call("2", search, { q: "x" }), call("3", search, { q: "x" }));
    await flush();
    expect(h.running.size).toBe(3);
  });

  it("a provider-wide lock never blocks another provider", async () => {
    const h = harness();
    h.submit(call("1", bash, {}), call("2", edit, { path: "a" }), call("3", search, {}));
    await flush();
    expect(h.running.size).toBe(3);
  });

  it("interactive calls run one at a time whatever ConcurrencySpec says", async () => {
    const ask = validated(interactive(), "user");
    const raw: ToolSchema = interactive({ name: "confirm", concurrency: { safe: true } });
    const confirm: ValidatedTool = {
      provider: "other-user",
      schema: raw,
      concurrency: concurrencyModeOf(raw),
      inputJsonSchema: {},
      outputJsonSchema: {},
    };
    expect(confirm.concurrency).toEqual({ kind: "interactive" });
    const h = harness();
    h.submit(call("1", ask, { question: "a?" }), call("2", confirm, {}), call("3", ask, { question: "b?" }));
    await flush();
    expect([...h.running]).toEqual(["1"]);
    await h.finish("1");
    expect([...h.running]).toEqual(["2"]);
    await h.finish("2");
    expect([...h.running]).toEqual(["3"]);
  });

  it("models without supports_parallel_tool_calls get their calls serialized", async () => {
    expect(serializeAllFor(model({ supportsParallelToolCalls: undefined }))).toBe(true);
    expect(serializeAllFor(model({ supportsParallelToolCalls: false }))).toBe(true);
    expect(serializeAllFor(model({ supportsParallelToolCalls: true }))).toBe(false);
    const h = harness({ serializeAll: true });
    h.submit(call("1", search, {}), call("2", edit, { path: "a" }), call("3", search, {}));
    await flush();
    expect([...h.running]).toEqual(["1"]);
    await h.finish("1");
    expect([...h.running]).toEqual(["2"]);
    await h.finish("2");
    expect([...h.running]).toEqual(["3"]);
  });

  it("a failed call releases its key for the calls queued behind it", async () => {
    const h = harness();
    h.submit(call("1", edit, { path: "a" }), call("2", edit, { path: "a" }));
    await flush();
    await h.finish("1", true);
    expect([...h.running]).toEqual(["2"]);
    await expect(h.results[0]).rejects.toThrow("boom");
  });

  it("schedule() returns every outcome in declaration order", async () => {
    const out = await schedule([call("1", edit, { path: "a" }), call("2", bash, {})], async (c) => {
      if (c.id === "2") throw new Error("nope");
      return c.id.repeat(2);
    });
    expect(out.map((o) => o.status)).toEqual(["fulfilled", "rejected"]);
    expect(out[0]).toMatchObject({ value: "11" });
  });
});

// ---- property: equal keys never overlap, distinct keys are never serialized ----

interface GenCall {
  provider: number;
  tool: number;
  mode: "unsafe" | "absent" | "keyed" | "per_call" | "interactive";
  key: number;
}

const modes = ["unsafe", "absent", "keyed", "per_call", "interactive"] as const;
const genCall = fc.record({
  provider: fc.nat({ max: 2 }),
  tool: fc.nat({ max: 1 }),
  mode: fc.constantFrom(...modes),
  key: fc.nat({ max: 2 }),
});

function toolFor(g: GenCall): ValidatedTool {
  const name = `t${g.tool}-${g.mode}`;
  const provider = `p${g.provider}`;
  if (g.mode === "interactive") return validated(interactive({ name }), provider);
  const concurrency =
    g.mode === "unsafe"
      ? { safe: false }
      : g.mode === "absent"
        ? undefined
        : g.mode === "keyed"
          ? { safe: true, keyFields: ["path"] }
          : { safe: true };
  return {
    provider,
    schema: resource({ name, concurrency }),
    concurrency: concurrencyModeOf(resource({ name, concurrency })),
    inputJsonSchema: {},
    outputJsonSchema: {},
  };
}

/** The spec's conflict relation, written independently of the implementation. */
function mustSerialize(a: GenCall, b: GenCall, serializeAll: boolean): boolean {
  if (serializeAll) return true;
  if (a.mode === "interactive" && b.mode === "interactive") return true;
  if (a.provider !== b.provider) return false;
  const providerWide = (g: GenCall) => g.mode === "unsafe" || g.mode === "absent" || g.mode === "interactive";
  if (providerWide(a) || providerWide(b)) return true;
  return a.mode === "keyed" && b.mode === "keyed" && a.tool === b.tool && a.key === b.key;
}

describe("scheduler properties", () => {
  it("scheduler runs never overlap equal keys and never serialize distinct ones", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(genCall, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
        fc.boolean(),
        async (gens, picks, serializeAll) => {
          const h = harness({ serializeAll });
          const calls = gens.map((g, i) => call(String(i), toolFor(g), { path: `f${g.key}` }));
          h.submit(...calls);
          const finished = new Set<number>();
          for (let step = 0; finished.size < gens.length; step++) {
            await flush();
            // Expected running set: not finished, and every earlier conflicting call finished.
            const expected = gens
              .map((_, i) => i)
              .filter((i) => !finished.has(i))
              .filter((i) =>
                gens
                  .slice(0, i)
                  .every((g, j) => finished.has(j) || !mustSerialize(g, gens[i]!, serializeAll)),
              );
            expect([...h.running].map(Number).sort((x, y) => x - y)).toEqual(expected);
            for (const i of h.running) {
              for (const j of h.running) {
                if (i !== j)
                  expect(mustSerialize(gens[Number(i)]!, gens[Number(j)]!, serializeAll)).toBe(false);
              }
            }
            const runningNow = [...h.running];
            const victim = runningNow[(picks[step % picks.length] ?? 0) % runningNow.length]!;
            finished.add(Number(victim));
            await h.finish(victim);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("kind does not drive scheduling", () => {
  it("a data_source declaring safe: false is serialized like a resource", async () => {
    const grep = validated(
      tool({ name: "grep", kind: ToolKind.DATA_SOURCE, concurrency: { safe: false } }),
      "search",
    );
    const h = harness();
    h.submit(call("1", grep, {}), call("2", grep, {}));
    await flush();
    expect([...h.running]).toEqual(["1"]);
  });
});
