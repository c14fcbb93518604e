// Delta merging between an adapter and the wire: runs of buffered deltas become one event,
// nothing is reordered or dropped, and nothing waits for input that has not arrived.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ev, mergeBufferedDeltas, type StreamEventInit } from "../src/index.ts";

type Step = { event: StreamEventInit; waitBefore: boolean };

/** A source yielding `steps`; a step marked waitBefore arrives only after a macrotask (a network read). */
async function* source(steps: readonly Step[]): AsyncGenerator<StreamEventInit> {
  for (const s of steps) {
    if (s.waitBefore) await new Promise<void>((resolve) => setTimeout(resolve, 0));
    yield s.event;
  }
}

async function collect(it: AsyncIterable<StreamEventInit>): Promise<StreamEventInit[]> {
  const out: StreamEventInit[] = [];
  for await (const e of it) out.push(e);
  return out;
}

const caseOf = (e: StreamEventInit) => e.event?.case;
const textOf = (e: StreamEventInit) => {
  const v = e.event;
  if (v?.case === "toolCallDelta") return v.value.argumentsFragment ?? "";
  return (v?.value as { text?: string } | undefined)?.text ?? "";
};
/** What may merge: text, thinking, and argument fragments of one call. */
const keyOf = (e: StreamEventInit) => {
  const v = e.event;
  if (v?.case === "textDelta" || v?.case === "thinkingDelta") return v.case;
  if (v?.case === "toolCallDelta") return `tool:${v.value.id}`;
  return undefined;
};

/** The stream as the kernel accumulates it: runs of mergeable deltas joined, other events as they are. */
function normalized(events: readonly StreamEventInit[]): Array<[string | undefined, string]> {
  const out: Array<[string | undefined, string]> = [];
  for (const e of events) {
    const k = keyOf(e);
    const last = out.at(-1);
    if (k !== undefined && last?.[0] === k) last[1] += textOf(e);
    else out.push(k !== undefined ? [k, textOf(e)] : [caseOf(e), JSON.stringify(e)]);
  }
  return out;
}

describe("mergeBufferedDeltas", () => {
  it("merges deltas that are already buffered into one event", async () => {
    const steps: Step[] = [
      { event: ev.start("r"), waitBefore: false },
      ...["a", "b", "c"].map((t) => ({ event: ev.text(t), waitBefore: false })),
      { event: ev.thinking("x"), waitBefore: false },
      { event: ev.thinking("y"), waitBefore: false },
      { event: ev.text("d"), waitBefore: false },
      { event: ev.stop(1), waitBefore: false },
    ];
    const out = await collect(mergeBufferedDeltas(source(steps)));
    expect(out.map((e) => [caseOf(e), textOf(e)])).toEqual([
      ["streamStart", ""],
      ["textDelta", "a"],
      ["textDelta", "bc"],
      ["thinkingDelta", "xy"],
      ["textDelta", "d"],
      ["stop", ""],
    ]);
    // Events that were not merged are passed through as they are.
    expect(out[0]).toBe(steps[0]!.event);
    expect(out.at(-1)).toBe(steps.at(-1)!.event);
  });

  it("merges argument fragments of one tool call, never across calls", async () => {
    const steps: Step[] = [
      ev.toolStart("a", "read"),
      ev.toolDelta("a", '{"pa'),
      ev.toolDelta("a", 'th":"x"}'),
      ev.toolDelta("b", "{}"),
      ev.toolDelta("a", ""),
      ev.toolDone("a"),
    ].map((event) => ({ event, waitBefore: false }));
    const out = await collect(mergeBufferedDeltas(source(steps)));
    expect(out.map((e) => [caseOf(e), textOf(e)])).toEqual([
      ["toolCallStart", ""],
      ["toolCallDelta", '{"pa'],
      ["toolCallDelta", 'th":"x"}'],
      ["toolCallDelta", "{}"],
      ["toolCallDelta", ""],
      ["toolCallDone", ""],
    ]);
    expect(out[2]!.event).toMatchObject({ value: { id: "a" } });
    expect(out[3]!.event).toMatchObject({ value: { id: "b" } });
  });

  it("sends held text as soon as the source waits for input", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* slow(): AsyncGenerator<StreamEventInit> {
      yield ev.text("a");
      yield ev.text("b");
      yield ev.text("c");
      await gate; // the vendor has sent nothing more yet
      yield ev.text("d");
    }
    const it = mergeBufferedDeltas(slow())[Symbol.asyncIterator]();
    expect(textOf((await it.next()).value as StreamEventInit)).toBe("a");
    // Resolves although the source is still blocked: nothing waits for "d".
    expect(textOf((await it.next()).value as StreamEventInit)).toBe("bc");
    release();
    expect(textOf((await it.next()).value as StreamEventInit)).toBe("d");
    expect((await it.next()).done).toBe(true);
  });

  it("releases held text before a failure of the source", async () => {
    async function* failing(): AsyncGenerator<StreamEventInit> {
      yield ev.text("The ");
      yield ev.text("partial ");
      yield ev.text("answer");
      throw new Error("stream broke off");
    }
    const out: StreamEventInit[] = [];
    await expect(
      (async () => {
        for await (const e of mergeBufferedDeltas(failing())) out.push(e);
      })(),
    ).rejects.toThrow("stream broke off");
    expect(out.map(textOf)).toEqual(["The ", "partial answer"]);
  });

  it("never grows a merged event beyond the limit", async () => {
    const steps = Array.from({ length: 10 }, () => ({ event: ev.text("12345"), waitBefore: false }));
    const out = await collect(mergeBufferedDeltas(source(steps), { maxChars: 12 }));
    expect(out.map(textOf)).toEqual([
      "12345",
      "1234512345",
      "1234512345",
      "1234512345",
      "1234512345",
      "12345",
    ]);
  });

  it("closes the source when the consumer stops early", async () => {
    let closed = false;
    async function* endless(): AsyncGenerator<StreamEventInit> {
      try {
        for (let i = 0; ; i++) {
          await new Promise<void>((resolve) => setTimeout(resolve, 0));
          yield ev.text(String(i));
        }
      } finally {
        closed = true;
      }
    }
    for await (const e of mergeBufferedDeltas(endless())) {
      expect(textOf(e)).toBe("0");
      break;
    }
    expect(closed).toBe(true);
  });

  it("sends the answer's first delta alone, without waiting for the rest of a buffered body", async () => {
    // A body read faster than it is parsed never makes the source wait: before, the first
    // event out held every delta up to the 64 KiB limit, which delayed the first token.
    const steps = Array.from({ length: 5_000 }, (_, i) => ({
      event: ev.text(`tok${i} `),
      waitBefore: false,
    }));
    const it = mergeBufferedDeltas(source(steps))[Symbol.asyncIterator]();
    expect(textOf((await it.next()).value as StreamEventInit)).toBe("tok0 ");
    await it.return?.(undefined);
  });

  it("releases a run held for maxHoldMs although the source keeps delivering", async () => {
    let t = 0;
    const now = () => t++; // every look at the clock is one "millisecond" later
    const steps = Array.from({ length: 50 }, () => ({ event: ev.text("x"), waitBefore: false }));
    const out = await collect(mergeBufferedDeltas(source(steps), { maxHoldMs: 5, now }));
    // The first delta alone, then runs released after 5 ms of holding (6 deltas), then the rest.
    expect(out.map(textOf)).toEqual(["x", ...Array.from({ length: 8 }, () => "xxxxxx"), "x"]);
  });

  it("never reorders or drops anything, wherever the network reads fall", async () => {
    const event = fc.oneof(
      fc.string({ maxLength: 4 }).map((t) => ev.text(t)),
      fc.string({ maxLength: 4 }).map((t) => ev.thinking(t)),
      fc.tuple(fc.constantFrom("a", "b"), fc.string({ maxLength: 3 })).map(([id, f]) => ev.toolDelta(id, f)),
      fc.constant(ev.metadata({ actualModel: "m" })),
      fc.constant(ev.signature("sig")),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ event, waitBefore: fc.boolean() }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        async (steps, limit) => {
          const out = await collect(mergeBufferedDeltas(source(steps), { maxChars: limit }));
          expect(normalized(out)).toEqual(normalized(steps.map((s) => s.event)));
          for (const e of out) expect(textOf(e).length).toBeLessThanOrEqual(Math.max(limit, 4));
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("text block starts", () => {
  it("a delta that starts a block is never merged into the text before it, and keeps its state", async () => {
    const steps: Step[] = [ev.text("Got "), ev.text("it"), ev.textBlock("Here", "S"), ev.text(" are")].map(
      (event) => ({ event, waitBefore: false }),
    );
    const out = await collect(mergeBufferedDeltas(source(steps)));
    expect(
      out.map((e) => [
        textOf(e),
        (e.event?.value as { startsBlock?: boolean } | undefined)?.startsBlock ?? false,
      ]),
    ).toEqual([
      ["Got ", false],
      ["it", false],
      ["Here are", true],
    ]);
    const v = out[2]!.event?.value as { vendorState?: Uint8Array };
    expect(new TextDecoder().decode(v.vendorState)).toBe("S");
  });
});
