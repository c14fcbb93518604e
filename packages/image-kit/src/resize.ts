// Downscaling by area averaging: each output pixel is the mean of the source area it
// covers (fractional edges weighted), on premultiplied alpha so transparent pixels do not
// darken their neighbours. For shrinking this is the filter that keeps thin text legible
// (a bilinear or bicubic kernel samples only a few source pixels and aliases past 2x).
// One output row at a time: memory is one accumulator row, whatever the source size.
import type { Rgba } from "./rgba.ts";

interface Tap {
  index: number;
  weight: number;
}

/** For each output position, the source positions it covers and their weights (summing to 1). */
function taps(src: number, dst: number): Tap[][] {
  const scale = src / dst;
  const out: Tap[][] = [];
  for (let o = 0; o < dst; o++) {
    const start = o * scale;
    const end = Math.min(src, (o + 1) * scale);
    const list: Tap[] = [];
    for (let i = Math.floor(start); i < end; i++) {
      const w = Math.min(end, i + 1) - Math.max(start, i);
      if (w > 1e-9) list.push({ index: i, weight: w / scale });
    }
    out.push(list);
  }
  return out;
}

export function resize(img: Rgba, width: number, height: number): Rgba {
  if (width === img.width && height === img.height) return img;
  if (width > img.width || height > img.height) throw new Error("resize only shrinks");
  const sw = img.width;
  const src = img.data;
  const cols = taps(sw, width);
  const rows = taps(img.height, height);
  const out = new Uint8Array(width * height * 4);
  const acc = new Float64Array(sw * 4);
  for (let y = 0; y < height; y++) {
    acc.fill(0);
    for (const { index, weight } of rows[y]!) {
      let p = index * sw * 4;
      for (let x = 0; x < sw * 4; x += 4, p += 4) {
        const a = src[p + 3]! * weight;
        acc[x] = acc[x]! + src[p]! * a;
        acc[x + 1] = acc[x + 1]! + src[p + 1]! * a;
        acc[x + 2] = acc[x + 2]! + src[p + 2]! * a;
        acc[x + 3] = acc[x + 3]! + a;
      }
    }
    let q = y * width * 4;
    for (let x = 0; x < width; x++, q += 4) {
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (const { index, weight } of cols[x]!) {
        const k = index * 4;
        r += acc[k]! * weight;
        g += acc[k + 1]! * weight;
        b += acc[k + 2]! * weight;
        a += acc[k + 3]! * weight;
      }
      if (a > 0) {
        out[q] = Math.min(255, Math.round(r / a));
        out[q + 1] = Math.min(255, Math.round(g / a));
        out[q + 2] = Math.min(255, Math.round(b / a));
      }
      out[q + 3] = Math.min(255, Math.round(a));
    }
  }
  return { width, height, data: out };
}
