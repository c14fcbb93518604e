// Fitting a request's images to the target model: which images change and how, what stays
// the same object, placeholders for images that cannot be sent, the many-images rule, the
// default for a vision model without declared limits, and the cache.
import { create } from "@bufbuild/protobuf";
import { encodeJpeg, encodePng, imageHeader, type Rgba } from "@pluggableharness/image-kit";
import {
  type ContentBlock,
  ContentBlockSchema,
  type Message,
  MessageSchema,
  Role,
} from "@pluggableharness/protocol/content";
import { type ModelSpec, ModelSpecSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_IMAGE_LIMITS,
  fitRequestImages,
  ImageFitCache,
  imageLimitsFor,
  newNotes,
} from "../../src/loop/turn/image-fit.ts";

function pixels(width: number, height: number): Rgba {
  const data = new Uint8Array(width * height * 4);
  for (let i = 0; i < data.length; i += 4) {
    const x = (i / 4) % width;
    data.set([(x * 255) / width, 80, 160, 255], i);
  }
  return { width, height, data };
}

const image = (data: Uint8Array, mediaType = "image/png"): ContentBlock =>
  create(ContentBlockSchema, {
    block: { case: "image", value: { mediaType, source: { case: "data", value: data } } },
  });
const text = (t: string): ContentBlock =>
  create(ContentBlockSchema, { block: { case: "text", value: { text: t } } });
const user = (...content: ContentBlock[]): Message => create(MessageSchema, { role: Role.USER, content });
const toolResult = (...content: ContentBlock[]): ContentBlock =>
  create(ContentBlockSchema, { block: { case: "toolResult", value: { toolUseId: "c1", content } } });

const claude = create(ModelSpecSchema, {
  id: "claude-x",
  supportsVision: true,
  imageLimits: {
    maxBytes: 3_932_160n,
    maxLongEdge: 1568,
    maxPixels: 1_150_000n,
    manyImagesThreshold: 20,
    manyImagesLongEdge: 2000,
  },
});

function imagesOf(messages: readonly Message[]): Array<{ mediaType: string; data: Uint8Array }> {
  const out: Array<{ mediaType: string; data: Uint8Array }> = [];
  const walk = (blocks: readonly ContentBlock[]) => {
    for (const b of blocks) {
      if (b.block.case === "image" && b.block.value.source.case === "data")
        out.push({ mediaType: b.block.value.mediaType, data: b.block.value.source.value });
      if (b.block.case === "toolResult") walk(b.block.value.content);
    }
  };
  for (const m of messages) walk(m.content);
  return out;
}

describe("fitRequestImages", () => {
  const big = encodePng(pixels(2400, 1600));
  const small = encodePng(pixels(40, 30));

  it("fits a large image, in a user message and inside a tool result, and leaves the rest alone", () => {
    const plain = user(text("hello"));
    const withSmall = user(image(small));
    const messages = [
      plain,
      withSmall,
      user(text("look"), image(big)),
      user(toolResult(text("read"), image(big))),
    ];
    const cache = new ImageFitCache();
    const { messages: out, notes } = fitRequestImages(messages, claude, cache);
    expect(out[0]).toBe(plain);
    expect(out[1]).toBe(withSmall); // within the limits: the same bytes, the same object
    const sent = imagesOf(out);
    expect(sent[0]!.data).toBe(small);
    for (const s of sent.slice(1)) {
      const h = imageHeader(s.data)!;
      expect(h.mediaType).toBe("image/png");
      expect(Math.max(h.width, h.height)).toBeLessThanOrEqual(1568);
      expect(h.width * h.height).toBeLessThanOrEqual(1_150_000);
    }
    // The model is told the image was scaled (coordinates it reads are in the new size).
    expect(JSON.stringify(out[2]!.content.map((b) => b.block.value))).toMatch(
      /image downscaled from 2400x1600 to \d+x\d+ pixels to fit claude-x/,
    );
    expect(out[3]!.content[0]!.block.case).toBe("toolResult");
    // The input is untouched: history keeps the original.
    expect(imagesOf(messages)[1]!.data).toBe(big);
    expect(notes.map((n) => n.kind)).toEqual(["fitted", "fitted"]);
    // Both copies of the same image: fitted once.
    expect(cache.computed).toBe(2);
    fitRequestImages(messages, claude, cache);
    expect(cache.computed).toBe(2);
  });

  it("turns an image that cannot be fitted into a note, not a failure", () => {
    const corrupt = big.slice(0, 3000);
    const { messages, notes } = fitRequestImages(
      [user(text("see"), image(corrupt))],
      claude,
      new ImageFitCache(),
    );
    expect(imagesOf(messages)).toEqual([]);
    const note = messages[0]!.content[1]!;
    expect(note.block.case).toBe("text");
    expect(note.block.value).toMatchObject({
      text: expect.stringMatching(
        /^\[image not sent: the PNG image of 2400x1600 pixels, 3000 bytes is corrupt/,
      ),
    });
    expect(notes).toEqual([
      expect.objectContaining({ kind: "unfit", text: expect.stringContaining("not sent to claude-x") }),
    ]);
  });

  it("applies the many-images rule only past its threshold", () => {
    const wide = create(ModelSpecSchema, {
      id: "hi-res",
      supportsVision: true,
      imageLimits: {
        maxBytes: 0n,
        maxLongEdge: 2576,
        maxPixels: 0n,
        manyImagesThreshold: 2,
        manyImagesLongEdge: 2000,
      },
    });
    expect(imageLimitsFor(wide, 2).maxLongEdge).toBe(2576);
    expect(imageLimitsFor(wide, 3).maxLongEdge).toBe(2000);
    const photo = encodeJpeg(pixels(2400, 1200), 80);
    const two = fitRequestImages(
      [user(image(photo, "image/jpeg"), image(photo, "image/jpeg"))],
      wide,
      new ImageFitCache(),
    );
    expect(imagesOf(two.messages).map((i) => i.data)).toEqual([photo, photo]);
    const three = fitRequestImages(
      [user(...Array.from({ length: 3 }, () => image(photo, "image/jpeg")))],
      wide,
      new ImageFitCache(),
    );
    for (const i of imagesOf(three.messages)) {
      expect(i.mediaType).toBe("image/jpeg");
      expect(imageHeader(i.data)).toMatchObject({ width: 2000, height: 1000 });
    }
  });

  it("uses the conservative default for a vision model that declares no limits, and skips non-vision models", () => {
    const bare: ModelSpec = create(ModelSpecSchema, { id: "local", supportsVision: true });
    expect(imageLimitsFor(bare, 1)).toEqual(DEFAULT_IMAGE_LIMITS);
    const { messages } = fitRequestImages([user(image(big))], bare, new ImageFitCache());
    expect(imageHeader(imagesOf(messages)[0]!.data)).toMatchObject({ width: 2000, height: 1333 });
    const blind = create(ModelSpecSchema, { id: "text-only", supportsVision: false });
    const input = [user(image(big))];
    expect(fitRequestImages(input, blind, new ImageFitCache()).messages[0]).toBe(input[0]);
  });

  it("reports each image once per session", () => {
    const session = {};
    const note = { kind: "unfit" as const, key: "abc", text: "x" };
    expect(newNotes(session, [note])).toEqual([note]);
    expect(newNotes(session, [note])).toEqual([]);
    expect(newNotes({}, [note])).toEqual([note]);
  });
});
