// A camera JPEG often stores its pixels sideways with an EXIF Orientation tag saying how to
// show them. Re-encoding drops EXIF, so the turn is applied to the pixels first; otherwise
// a downscaled phone photo would reach the model rotated.
import type { Rgba } from "./rgba.ts";

/** EXIF orientation 1-8 (1: as stored). */
export type Orientation = number;

/** The Orientation tag of a JPEG's APP1 Exif segment, 1 when there is none. */
export function jpegOrientation(b: Uint8Array): Orientation {
  let i = 2;
  while (i + 4 < b.length && b[i] === 0xff) {
    const marker = b[i + 1]!;
    if (marker === 0xda || marker === 0xd9) break; // start of scan: no more metadata
    const len = (b[i + 2]! << 8) | b[i + 3]!;
    if (marker === 0xe1 && Buffer.from(b.buffer, b.byteOffset + i + 4, 6).toString("latin1") === "Exif\0\0") {
      const t = i + 10; // TIFF header
      const le = b[t] === 0x49;
      const u16 = (p: number) => (le ? b[p]! | (b[p + 1]! << 8) : (b[p]! << 8) | b[p + 1]!);
      const u32 = (p: number) =>
        le
          ? (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0
          : ((b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!) >>> 0;
      const ifd = t + u32(t + 4);
      if (ifd + 2 > b.length) return 1;
      const n = u16(ifd);
      for (let k = 0; k < n; k++) {
        const e = ifd + 2 + k * 12;
        if (e + 12 > b.length) return 1;
        if (u16(e) === 0x0112) {
          const v = u16(e + 8);
          return v >= 1 && v <= 8 ? v : 1;
        }
      }
      return 1;
    }
    i += 2 + len;
  }
  return 1;
}

/** The pixels as they are meant to be seen under orientation `o`. */
export function orient(img: Rgba, o: Orientation): Rgba {
  if (o <= 1 || o > 8) return img;
  const { width: w, height: h, data } = img;
  const swap = o >= 5;
  const ow = swap ? h : w;
  const oh = swap ? w : h;
  const out = new Uint8Array(data.length);
  const aligned = data.byteOffset % 4 === 0 ? data : data.slice();
  const src = new Uint32Array(aligned.buffer, aligned.byteOffset, w * h);
  const dst = new Uint32Array(out.buffer);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let dx: number;
      let dy: number;
      switch (o) {
        case 2:
          [dx, dy] = [w - 1 - x, y];
          break;
        case 3:
          [dx, dy] = [w - 1 - x, h - 1 - y];
          break;
        case 4:
          [dx, dy] = [x, h - 1 - y];
          break;
        case 5:
          [dx, dy] = [y, x];
          break;
        case 6:
          [dx, dy] = [h - 1 - y, x];
          break;
        case 7:
          [dx, dy] = [h - 1 - y, w - 1 - x];
          break;
        default:
          [dx, dy] = [y, w - 1 - x];
          break; // 8
      }
      dst[dy * ow + dx] = src[y * w + x]!;
    }
  }
  return { width: ow, height: oh, data: out };
}
