// What fitting an image to a model costs the kernel: fitImage on generated screenshots and
// photos at common sizes, against each first-party vendor's limits, and a cache hit (the
// per-turn cost once an image has been fitted). Prints median / max in ms and the output
// size; nothing is asserted.
//
// Usage: node bench/images/run.ts [--runs N]
import { parseArgs } from "node:util";
import { encodeJpeg, encodePng, fitImage, type ImageLimits, type Rgba } from "@pluggableharness/image-kit";
import { ImageFitCache } from "../../packages/kernel/src/loop/turn/image-fit.ts";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);

/** A screenshot-like picture: flat areas, gradients and fine detail. */
function picture(width: number, height: number): Rgba {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const text = (x % 12 < 2 && y % 20 < 14) || (y % 20 === 15 && x % 300 < 200);
      const v = text ? 20 : (230 - (x * 40) / width) | 0;
      data.set([v, v, text ? 20 : (240 - (y * 30) / height) | 0, 255], (y * width + x) * 4);
    }
  return { width, height, data };
}

const LIMITS: Record<string, ImageLimits> = {
  anthropic: { maxBytes: 3_932_160, maxLongEdge: 1568, maxPixels: 1_150_000 },
  openai: { maxBytes: 20_000_000, maxLongEdge: 2048, maxPixels: 0 },
  google: { maxBytes: 7_000_000, maxLongEdge: 3072, maxPixels: 0 },
};

function time(f: () => unknown): number[] {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    f();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}
const fmt = (ms: number[]) =>
  `median ${ms[Math.floor(ms.length / 2)]!.toFixed(0)} ms, max ${ms.at(-1)!.toFixed(0)} ms`;

for (const [w, h] of [
  [1920, 1080],
  [2560, 1440],
  [3840, 2160],
]) {
  const px = picture(w!, h!);
  const inputs = { png: encodePng(px), jpeg: encodeJpeg(px, 90) };
  for (const [kind, bytes] of Object.entries(inputs)) {
    for (const [vendor, limits] of Object.entries(LIMITS)) {
      const r = fitImage(bytes, `image/${kind}`, limits);
      const out =
        r.kind === "fitted"
          ? `${r.image.mediaType} ${r.image.width}x${r.image.height}, ${r.image.bytes} B`
          : r.kind === "unchanged"
            ? "unchanged"
            : r.reason;
      console.log(
        `${w}x${h} ${kind} (${bytes.length} B) -> ${vendor}: ${out}; ${fmt(time(() => fitImage(bytes, `image/${kind}`, limits)))}`,
      );
    }
  }
}
const cache = new ImageFitCache();
const shot = encodePng(picture(3840, 2160));
cache.fit(shot, "image/png", LIMITS["anthropic"]!);
console.log(
  `cache hit (3840x2160 png, anthropic): ${fmt(time(() => cache.fit(shot, "image/png", LIMITS["anthropic"]!)))}`,
);
