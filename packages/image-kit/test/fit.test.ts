// Fitting images to a model's limits: sizes, formats, byte caps, corrupt input, GIF first
// frames, WebP, EXIF orientation, transparency and determinism. Images are generated here
// (no binary fixtures); sizes stay modest so the suite is fast.
import omggif from "omggif";
import { describe, expect, it } from "vitest";
import {
  decode,
  encodeJpeg,
  encodePng,
  fitImage,
  type ImageLimits,
  imageHeader,
  type Rgba,
  resize,
  targetSize,
} from "../src/index.ts";

/** A smooth gradient with a little texture: compresses like a screenshot or photo would. */
function gradient(width: number, height: number, alpha = 255): Rgba {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      data[i] = (x * 255) / width;
      data[i + 1] = (y * 255) / height;
      data[i + 2] = (x ^ y) & 0x1f;
      data[i + 3] = alpha;
    }
  return { width, height, data };
}

/** Pseudo-random pixels: incompressible, to force byte caps. */
function noise(width: number, height: number): Rgba {
  const data = new Uint8Array(width * height * 4);
  let s = 7;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    data[i] = i % 4 === 3 ? 255 : s >>> 24;
  }
  return { width, height, data };
}

const ANTHROPIC: ImageLimits = { maxBytes: 3_932_160, maxLongEdge: 1568, maxPixels: 1_150_000 };
const OPENAI: ImageLimits = { maxBytes: 20_000_000, maxLongEdge: 2048, maxPixels: 0 };

describe("targetSize", () => {
  it("keeps the aspect ratio under the long edge and the pixel cap", () => {
    expect(targetSize(3000, 2000, OPENAI)).toEqual([2048, 1365]);
    const [w, h] = targetSize(3000, 2000, ANTHROPIC);
    expect(w * h).toBeLessThanOrEqual(1_150_000);
    expect(Math.abs(w / h - 1.5)).toBeLessThan(0.01);
    expect(targetSize(2000, 3000, OPENAI)).toEqual([1365, 2048]);
  });
  it("leaves an image within the limits alone, and 0 means no limit", () => {
    expect(targetSize(800, 600, ANTHROPIC)).toEqual([800, 600]);
    expect(targetSize(9000, 9000, { maxBytes: 0, maxLongEdge: 0, maxPixels: 0 })).toEqual([9000, 9000]);
  });
});

describe("fitImage", () => {
  const bigPng = encodePng(gradient(2400, 1600));
  const bigJpeg = encodeJpeg(gradient(2400, 1600), 92);

  it("downscales a large PNG and keeps it PNG", () => {
    const r = fitImage(bigPng, "image/png", OPENAI);
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.image).toMatchObject({ mediaType: "image/png", width: 2048, height: 1365 });
    expect(imageHeader(r.data)).toMatchObject({ mediaType: "image/png", width: 2048, height: 1365 });
    expect(r.original).toMatchObject({
      mediaType: "image/png",
      width: 2400,
      height: 1600,
      bytes: bigPng.length,
    });
  });

  it("downscales a large JPEG and keeps it JPEG, within every limit", () => {
    const r = fitImage(bigJpeg, "image/jpeg", ANTHROPIC);
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.image.mediaType).toBe("image/jpeg");
    const h = imageHeader(r.data)!;
    expect(Math.max(h.width, h.height)).toBeLessThanOrEqual(1568);
    expect(h.width * h.height).toBeLessThanOrEqual(1_150_000);
    expect(r.data.length).toBeLessThanOrEqual(ANTHROPIC.maxBytes);
    // The pixels are the picture, not garbage: the left edge dark red, the right bright.
    const px = decode(r.data, "image/jpeg");
    expect(px.data[0]!).toBeLessThan(40);
    expect(px.data[(px.width - 1) * 4]!).toBeGreaterThan(215);
  });

  it("passes a small image through unchanged", () => {
    const small = encodePng(gradient(64, 48));
    expect(fitImage(small, "image/png", ANTHROPIC)).toEqual({
      kind: "unchanged",
      image: { mediaType: "image/png", width: 64, height: 48, bytes: small.length },
    });
  });

  it("re-encodes as JPEG only when PNG cannot meet the byte limit", () => {
    const png = encodePng(noise(600, 400));
    const limits = { maxBytes: 200_000, maxLongEdge: 2048, maxPixels: 0 };
    expect(png.length).toBeGreaterThan(limits.maxBytes);
    const r = fitImage(png, "image/png", limits);
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.image.mediaType).toBe("image/jpeg");
    expect(r.data.length).toBeLessThanOrEqual(limits.maxBytes);
    expect(imageHeader(r.data)?.mediaType).toBe("image/jpeg");
  });

  it("shrinks further when even JPEG is over the byte limit", () => {
    const r = fitImage(encodeJpeg(noise(800, 600), 95), "image/jpeg", {
      maxBytes: 60_000,
      maxLongEdge: 0,
      maxPixels: 0,
    });
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.data.length).toBeLessThanOrEqual(60_000);
    expect(r.image.width).toBeLessThan(800);
    expect(r.image.width / r.image.height).toBeCloseTo(4 / 3, 1);
  });

  it("is deterministic: the same input gives the same bytes", () => {
    const a = fitImage(bigPng, "image/png", ANTHROPIC);
    const b = fitImage(new Uint8Array(bigPng), "image/png", ANTHROPIC);
    expect(a.kind).toBe("fitted");
    if (a.kind !== "fitted" || b.kind !== "fitted") return;
    expect(Buffer.from(b.data).equals(Buffer.from(a.data))).toBe(true);
  });

  it("says why a corrupt or unknown image cannot be sent, never throwing", () => {
    const truncated = bigPng.slice(0, 4000);
    const r = fitImage(truncated, "image/png", ANTHROPIC);
    expect(r.kind).toBe("unfit");
    if (r.kind === "unfit") expect(r.reason).toMatch(/PNG image of 2400x1600 pixels, 4000 bytes is corrupt/);
    // A small corrupt image is caught too (it would otherwise be refused by the vendor).
    const bad = Buffer.concat([Buffer.from(encodePng(gradient(20, 20))).subarray(0, 40), Buffer.alloc(30)]);
    expect(fitImage(bad, "image/png", ANTHROPIC).kind).toBe("unfit");
    const text = fitImage(Buffer.from("hello, not an image"), "image/png", ANTHROPIC);
    expect(text).toMatchObject({
      kind: "unfit",
      reason: expect.stringMatching(/is not a PNG, JPEG, GIF or WebP image/),
    });
  });

  it("sends an image under its real media type when it was declared as another", () => {
    const jpeg = encodeJpeg(gradient(50, 40), 80);
    const r = fitImage(jpeg, "image/png", ANTHROPIC);
    expect(r).toMatchObject({ kind: "fitted", image: { mediaType: "image/jpeg", width: 50, height: 40 } });
    if (r.kind === "fitted") expect(r.data).toBe(jpeg);
  });

  it("takes a GIF's first frame, as PNG", () => {
    const w = 2400;
    const h = 40;
    const buf = new Uint8Array(w * h + 4096);
    const gif = new omggif.GifWriter(buf, w, h, { palette: [0x000000, 0xff0000, 0x00ff00, 0x0000ff] });
    gif.addFrame(
      0,
      0,
      w,
      h,
      Array.from({ length: w * h }, () => 1),
    );
    gif.addFrame(
      0,
      0,
      w,
      h,
      Array.from({ length: w * h }, () => 2),
    );
    const bytes = buf.slice(0, gif.end());
    const r = fitImage(bytes, "image/gif", OPENAI);
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.image).toMatchObject({ mediaType: "image/png", width: 2048, height: 34 });
    const px = decode(r.data, "image/png");
    expect([...px.data.subarray(0, 4)]).toEqual([255, 0, 0, 255]); // frame one: red
  });

  it("passes a WebP within the limits and explains one over them", () => {
    // A VP8L header for 100x50 (bits: width-1 | (height-1) << 14).
    const webp = (w: number, hh: number) => {
      const b = Buffer.alloc(40);
      b.write("RIFF", 0, "latin1");
      b.writeUInt32LE(32, 4);
      b.write("WEBPVP8L", 8, "latin1");
      b.writeUInt32LE(10, 16);
      b[20] = 0x2f;
      b.writeUInt32LE((w - 1) | ((hh - 1) << 14), 21);
      return b;
    };
    expect(fitImage(webp(100, 50), "image/webp", ANTHROPIC).kind).toBe("unchanged");
    const r = fitImage(webp(4000, 3000), "image/webp", ANTHROPIC);
    expect(r).toMatchObject({
      kind: "unfit",
      reason: expect.stringMatching(/WebP images cannot be downscaled here/),
    });
  });

  it("applies a JPEG's EXIF orientation before downscaling (EXIF is not kept)", () => {
    const jpeg = Buffer.from(encodeJpeg(gradient(2400, 800), 85));
    // APP1 Exif, big-endian TIFF, one IFD entry: Orientation (0x0112) SHORT 6 (rotate 90° CW).
    const tiff = Buffer.from([
      0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00,
      0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]);
    const payload = Buffer.concat([Buffer.from("Exif\0\0", "latin1"), tiff]);
    const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0, payload.length + 2]), payload]);
    const rotated = Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)]);
    const r = fitImage(rotated, "image/jpeg", OPENAI);
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.original).toMatchObject({ width: 800, height: 2400 });
    expect(r.image).toMatchObject({ width: 683, height: 2048 });
  });

  it("flattens transparency onto white when it must go to JPEG", () => {
    const clear = gradient(400, 400, 0);
    const png = encodePng({ ...clear, data: noise(400, 400).data.map((v, i) => (i % 4 === 3 ? 0 : v)) });
    const r = fitImage(png, "image/png", { maxBytes: 20_000, maxLongEdge: 0, maxPixels: 0 });
    expect(r.kind).toBe("fitted");
    if (r.kind !== "fitted") return;
    expect(r.image.mediaType).toBe("image/jpeg");
    const px = decode(r.data, "image/jpeg");
    expect(px.data[0]!).toBeGreaterThan(245);
  });
});

describe("resize (area averaging)", () => {
  it("averages the source area of each output pixel", () => {
    // A 4x2 image: black/white columns -> 2x1 of mid grey.
    const data = new Uint8Array(4 * 2 * 4);
    for (let i = 0; i < 8; i++) {
      const v = i % 2 === 0 ? 0 : 255;
      data.set([v, v, v, 255], i * 4);
    }
    const out = resize({ width: 4, height: 2, data }, 2, 1);
    expect([...out.data]).toEqual([128, 128, 128, 255, 128, 128, 128, 255]);
  });

  it("does not let transparent pixels darken their neighbours", () => {
    const data = new Uint8Array([255, 0, 0, 255, 0, 0, 0, 0]); // red, then transparent black
    const out = resize({ width: 2, height: 1, data }, 1, 1);
    expect([...out.data]).toEqual([255, 0, 0, 128]);
  });
});
