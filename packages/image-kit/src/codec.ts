// Decoding and encoding, through pure-JS codecs (no native addons): pngjs for PNG,
// jpeg-js for JPEG, omggif for GIF (first frame). Every image becomes 8-bit RGBA; WebP is
// recognised and measured (header.ts) but not decoded (no pure-JS WebP decoder is kept up).
import jpeg from "jpeg-js";
import omggif from "omggif";
import pngjs from "pngjs";
import type { ImageMediaType } from "./header.ts";
import { jpegOrientation, type Orientation, orient } from "./orientation.ts";
import type { Rgba } from "./rgba.ts";

export type { Rgba } from "./rgba.ts";

/** Largest image decoded at all (a decompression bomb is refused before it allocates). */
export const MAX_DECODE_PIXELS = 100_000_000;

export class DecodeError extends Error {
  override name = "DecodeError";
}

export function decode(bytes: Uint8Array, mediaType: ImageMediaType): Rgba {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    switch (mediaType) {
      case "image/png": {
        const png = pngjs.PNG.sync.read(buf);
        return { width: png.width, height: png.height, data: new Uint8Array(png.data) };
      }
      case "image/jpeg": {
        const img = jpeg.decode(buf, {
          useTArray: true,
          formatAsRGBA: true,
          maxResolutionInMP: MAX_DECODE_PIXELS / 1e6,
          maxMemoryUsageInMB: 2048,
        });
        const o: Orientation = jpegOrientation(buf);
        return orient({ width: img.width, height: img.height, data: img.data }, o);
      }
      case "image/gif": {
        const reader = new omggif.GifReader(buf);
        if (reader.width * reader.height > MAX_DECODE_PIXELS) throw new Error("too many pixels");
        const data = new Uint8Array(reader.width * reader.height * 4);
        reader.decodeAndBlitFrameRGBA(0, data);
        return { width: reader.width, height: reader.height, data };
      }
      case "image/webp":
        throw new DecodeError("WebP images cannot be decoded here");
    }
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError((err as Error).message || String(err));
  }
}

/** Whether any pixel is not fully opaque. */
export function hasAlpha(img: Rgba): boolean {
  const d = img.data;
  for (let i = 3; i < d.length; i += 4) if (d[i] !== 255) return true;
  return false;
}

export function encodePng(img: Rgba): Uint8Array {
  const png = new pngjs.PNG({ width: img.width, height: img.height });
  png.data = Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength);
  // Fixed settings: the same pixels always give the same bytes (prompt caching, replay).
  return new Uint8Array(pngjs.PNG.sync.write(png, { deflateLevel: 9, colorType: hasAlpha(img) ? 6 : 2 }));
}

/** JPEG at `quality` (1-100); transparency is flattened onto white, as a viewer shows it. */
export function encodeJpeg(img: Rgba, quality: number): Uint8Array {
  let data = img.data;
  if (hasAlpha(img)) {
    data = new Uint8Array(img.data.length);
    for (let i = 0; i < data.length; i += 4) {
      const a = img.data[i + 3]! / 255;
      data[i] = Math.round(img.data[i]! * a + 255 * (1 - a));
      data[i + 1] = Math.round(img.data[i + 1]! * a + 255 * (1 - a));
      data[i + 2] = Math.round(img.data[i + 2]! * a + 255 * (1 - a));
      data[i + 3] = 255;
    }
  }
  return new Uint8Array(jpeg.encode({ width: img.width, height: img.height, data }, quality).data);
}
