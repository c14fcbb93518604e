// Fitting one image to a model's limits. An image already within them is sent as it is
// (byte for byte); a larger one is downscaled, aspect ratio kept, to the longest edge and
// pixel count allowed, and re-encoded: a JPEG stays JPEG (quality 85), a PNG or GIF becomes
// PNG, and either drops to JPEG (85, then 70, then 55) only when that is what it takes to
// get under the byte limit; past that the image shrinks (a quarter or more) and tries again. Everything
// is deterministic: the same bytes and limits always give the same output bytes.
import { DecodeError, decode, encodeJpeg, encodePng, MAX_DECODE_PIXELS, type Rgba } from "./codec.ts";
import { type ImageHeader, type ImageMediaType, imageHeader } from "./header.ts";
import { resize } from "./resize.ts";

/** What one model takes. 0 in any field: no limit of that kind. */
export interface ImageLimits {
  /** Largest encoded image, in bytes (raw, before any base64). */
  maxBytes: number;
  /** Longest edge, in pixels. */
  maxLongEdge: number;
  /** Most pixels (width x height). */
  maxPixels: number;
}

export interface ImageFacts {
  mediaType: ImageMediaType;
  width: number;
  height: number;
  bytes: number;
}

export type FitResult =
  /** Within the limits: send the original bytes. */
  | { kind: "unchanged"; image: ImageFacts }
  /** Send `data` instead (smaller, or the original bytes under their real media type). */
  | { kind: "fitted"; data: Uint8Array; image: ImageFacts; original: ImageFacts }
  /** Cannot be sent: why, in words for the user and the model. */
  | { kind: "unfit"; reason: string };

const JPEG_QUALITIES = [85, 70, 55];
const MIN_EDGE = 16;

/** The largest size within `limits` with the aspect ratio of width x height. */
export function targetSize(width: number, height: number, limits: ImageLimits): [number, number] {
  let scale = 1;
  const long = Math.max(width, height);
  if (limits.maxLongEdge > 0 && long > limits.maxLongEdge) scale = limits.maxLongEdge / long;
  if (limits.maxPixels > 0 && width * height * scale * scale > limits.maxPixels)
    scale = Math.sqrt(limits.maxPixels / (width * height));
  if (scale >= 1) return [width, height];
  const edge = limits.maxLongEdge > 0 ? limits.maxLongEdge : Number.POSITIVE_INFINITY;
  let w = Math.max(1, Math.min(edge, Math.round(width * scale)));
  let h = Math.max(1, Math.min(edge, Math.round(height * scale)));
  // Floating point may leave the product a hair over the pixel cap.
  while (limits.maxPixels > 0 && w * h > limits.maxPixels) {
    if (w >= h) w--;
    else h--;
  }
  return [w, h];
}

const describe = (h: ImageHeader, bytes: number) =>
  `${h.format} image${h.width > 0 ? ` of ${h.width}x${h.height} pixels` : ""}, ${bytes} bytes`;

function limitsText(l: ImageLimits): string {
  const parts: string[] = [];
  if (l.maxLongEdge > 0) parts.push(`a longest edge of ${l.maxLongEdge} pixels`);
  if (l.maxPixels > 0) parts.push(`${l.maxPixels} pixels`);
  if (l.maxBytes > 0) parts.push(`${l.maxBytes} bytes`);
  return parts.join(", ");
}

/** Encodes `img` within `maxBytes`, shrinking it when no encoding is small enough. */
function encodeWithin(
  img: Rgba,
  source: ImageMediaType,
  maxBytes: number,
): { data: Uint8Array; mediaType: ImageMediaType; img: Rgba } | undefined {
  let current = img;
  for (;;) {
    if (source !== "image/jpeg") {
      const png = encodePng(current);
      if (maxBytes <= 0 || png.length <= maxBytes) return { data: png, mediaType: "image/png", img: current };
    }
    let smallest = Number.POSITIVE_INFINITY;
    for (const q of JPEG_QUALITIES) {
      const jpg = encodeJpeg(current, q);
      if (maxBytes <= 0 || jpg.length <= maxBytes)
        return { data: jpg, mediaType: "image/jpeg", img: current };
      smallest = jpg.length;
    }
    // Bytes go roughly with pixels: shrink by what the overshoot says, a quarter at least.
    const scale = Math.max(0.5, Math.min(0.75, Math.sqrt(maxBytes / smallest) * 0.95));
    const w = Math.floor(current.width * scale);
    const h = Math.floor(current.height * scale);
    if (w < MIN_EDGE || h < MIN_EDGE) return undefined;
    current = resize(current, w, h);
  }
}

/**
 * Fits `data` (declared as `declaredType`) to `limits`. Never throws: an image that is
 * corrupt, of an unsupported kind, or cannot be brought within the limits is "unfit",
 * with the reason.
 */
export function fitImage(data: Uint8Array, declaredType: string, limits: ImageLimits): FitResult {
  const header = imageHeader(data);
  if (!header)
    return {
      kind: "unfit",
      reason: `the ${declaredType || "image"} data (${data.length} bytes) is not a PNG, JPEG, GIF or WebP image`,
    };
  const facts = (w: number, h: number): ImageFacts => ({
    mediaType: header.mediaType,
    width: w,
    height: h,
    bytes: data.length,
  });
  const withinBytes = limits.maxBytes <= 0 || data.length <= limits.maxBytes;
  if (header.width > 0 && header.height > 0) {
    if (header.width * header.height > MAX_DECODE_PIXELS)
      return {
        kind: "unfit",
        reason: `the ${describe(header, data.length)} is too large to process (over ${MAX_DECODE_PIXELS} pixels)`,
      };
    const [tw, th] = targetSize(header.width, header.height, limits);
    if (tw === header.width && th === header.height && withinBytes) {
      // Within the limits. Decoded all the same (WebP aside) so that a corrupt image is
      // caught here rather than refused by the vendor, failing the turn.
      if (header.mediaType !== "image/webp") {
        try {
          decode(data, header.mediaType);
        } catch (err) {
          return {
            kind: "unfit",
            reason: `the ${describe(header, data.length)} is corrupt or truncated (decoder: ${(err as Error).message})`,
          };
        }
      }
      const image = facts(header.width, header.height);
      if (header.mediaType === declaredType) return { kind: "unchanged", image };
      return { kind: "fitted", data, image, original: { ...image } };
    }
  }
  if (header.mediaType === "image/webp")
    return {
      kind: "unfit",
      reason: `the ${describe(header, data.length)} is over the model's limits (${limitsText(limits)}) and WebP images cannot be downscaled here; convert it to PNG or JPEG`,
    };
  let img: Rgba;
  try {
    img = decode(data, header.mediaType);
  } catch (err) {
    const why = err instanceof DecodeError ? err.message : String(err);
    return {
      kind: "unfit",
      reason: `the ${describe(header, data.length)} is corrupt or truncated (decoder: ${why})`,
    };
  }
  const original = facts(img.width, img.height);
  const [tw, th] = targetSize(img.width, img.height, limits);
  const out = encodeWithin(resize(img, tw, th), header.mediaType, limits.maxBytes);
  if (!out)
    return {
      kind: "unfit",
      reason: `the ${describe(header, data.length)} cannot be brought within the model's limits (${limitsText(limits)})`,
    };
  return {
    kind: "fitted",
    data: out.data,
    image: { mediaType: out.mediaType, width: out.img.width, height: out.img.height, bytes: out.data.length },
    original,
  };
}
