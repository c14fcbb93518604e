// Image payloads as the vendors check them: a supported media type, well-formed base64,
// and bytes that really are that kind of image (every vendor refuses an image whose
// bytes do not match its declared type, e.g. Anthropic's "Image does not match the
// provided media type"), and Anthropic's size limits.
import { imageHeader } from "@pluggableharness/image-kit";

const TYPES: Record<string, (b: Buffer) => boolean> = {
  "image/png": (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  "image/jpeg": (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  "image/gif": (b) => ["GIF87a", "GIF89a"].includes(b.subarray(0, 6).toString("latin1")),
  "image/webp": (b) =>
    b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP",
};

export const IMAGE_MEDIA_TYPES = Object.keys(TYPES);

/** Why this inline image would be refused, or undefined. */
export function imageProblem(mediaType: unknown, data: unknown): string | undefined {
  if (typeof mediaType !== "string" || !(mediaType in TYPES))
    return `unsupported image media type ${JSON.stringify(mediaType)}; supported: ${IMAGE_MEDIA_TYPES.join(", ")}`;
  if (
    typeof data !== "string" ||
    data === "" ||
    !/^[A-Za-z0-9+/]+={0,2}$/.test(data) ||
    data.length % 4 !== 0
  )
    return "the image data is not valid base64";
  if (!TYPES[mediaType]!(Buffer.from(data, "base64")))
    return `the image data does not match the provided media type ${mediaType}`;
  return undefined;
}

/** The same for a data URL (`data:image/png;base64,...`); remote http(s) URLs pass. */
export function imageUrlProblem(url: unknown): string | undefined {
  if (typeof url !== "string") return "image_url must be a string";
  if (/^https?:\/\//.test(url)) return undefined;
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!m) return "image_url must be an http(s) URL or a base64 data URL";
  return imageProblem(m[1], m[2]);
}

/**
 * Anthropic's per-image limits (platform.claude.com/docs/en/build-with-claude/vision): 5 MB
 * of base64 text, 8000 px a side, 2000 px a side once a request carries more than 20
 * images. The messages are the API's own.
 */
export function anthropicImageLimitProblem(data: string, imagesInRequest: number): string | undefined {
  if (data.length > 5 * 1024 * 1024)
    return `image exceeds 5 MB maximum: ${data.length} bytes > 5242880 bytes`;
  const h = imageHeader(Buffer.from(data, "base64"));
  const edge = h ? Math.max(h.width, h.height) : 0;
  if (edge > 8000) return "At least one of the image dimensions exceed max allowed size: 8000 pixels";
  if (imagesInRequest > 20 && edge > 2000)
    return "At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels";
  return undefined;
}
