// What an image is from its first bytes (never its name or declared type), and its pixel
// size from its header, without decoding it.

export type ImageMediaType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

export interface ImageHeader {
  mediaType: ImageMediaType;
  /** Short format name for messages. */
  format: "PNG" | "JPEG" | "GIF" | "WebP";
  /** 0 when the header does not say (a truncated or odd file). */
  width: number;
  height: number;
}

const ascii = (b: Uint8Array, at: number, n: number) =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1", at, at + n);
const u16be = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!;
const u16le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8);
const u24le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);
const u32be = (b: Uint8Array, i: number) =>
  ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;

const PNG_SIG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The media type the bytes say they are, if one of the four formats vision models take. */
export function sniffImage(b: Uint8Array): ImageMediaType | undefined {
  if (b.length >= 8 && PNG_SIG.every((x, i) => b[i] === x)) return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 6 && (ascii(b, 0, 6) === "GIF87a" || ascii(b, 0, 6) === "GIF89a")) return "image/gif";
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") return "image/webp";
  return undefined;
}

function jpegSize(b: Uint8Array): [number, number] {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return [0, 0];
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    // SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return [u16be(b, i + 7), u16be(b, i + 5)];
    i += 2 + u16be(b, i + 2);
  }
  return [0, 0];
}

function webpSize(b: Uint8Array): [number, number] {
  const chunk = ascii(b, 12, 4);
  if (chunk === "VP8X" && b.length >= 30) return [1 + u24le(b, 24), 1 + u24le(b, 27)];
  if (chunk === "VP8 " && b.length >= 30) return [u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff];
  if (chunk === "VP8L" && b.length >= 25) {
    const bits = (b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24)) >>> 0;
    return [(bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1];
  }
  return [0, 0];
}

/** The image's type and header size, or undefined when it is none of the four formats. */
export function imageHeader(b: Uint8Array): ImageHeader | undefined {
  const mediaType = sniffImage(b);
  switch (mediaType) {
    case "image/png":
      return b.length >= 24
        ? { mediaType, format: "PNG", width: u32be(b, 16), height: u32be(b, 20) }
        : { mediaType, format: "PNG", width: 0, height: 0 };
    case "image/jpeg": {
      const [width, height] = jpegSize(b);
      return { mediaType, format: "JPEG", width, height };
    }
    case "image/gif":
      return b.length >= 10
        ? { mediaType, format: "GIF", width: u16le(b, 6), height: u16le(b, 8) }
        : { mediaType, format: "GIF", width: 0, height: 0 };
    case "image/webp": {
      const [width, height] = webpSize(b);
      return { mediaType, format: "WebP", width, height };
    }
    default:
      return undefined;
  }
}
