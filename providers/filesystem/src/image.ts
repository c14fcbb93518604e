// Image files read_file shows a vision model: PNG, JPEG, GIF and WebP, recognised by their
// signature bytes (never by the name), with their pixel size read from the header.

export interface ImageInfo {
  mediaType: "image/png" | "image/jpeg" | "image/gif" | "image/webp";
  /** Short format name for messages. */
  format: string;
  width?: number;
  height?: number;
}

const ascii = (b: Uint8Array, at: number, n: number) =>
  Buffer.from(b.subarray(at, at + n)).toString("latin1");

function jpegSize(b: Buffer): { width: number; height: number } | undefined {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    const len = b.readUInt16BE(i + 2);
    // SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  return undefined;
}

function webpSize(b: Buffer): { width: number; height: number } | undefined {
  const chunk = ascii(b, 12, 4);
  if (chunk === "VP8X" && b.length >= 30)
    return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
  if (chunk === "VP8 " && b.length >= 30)
    return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  if (chunk === "VP8L" && b.length >= 25) {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return undefined;
}

/** What image `data` is, or undefined when it is none of the four formats. */
export function imageInfo(data: Buffer): ImageInfo | undefined {
  if (
    data.length >= 24 &&
    data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
  )
    return {
      mediaType: "image/png",
      format: "PNG",
      width: data.readUInt32BE(16),
      height: data.readUInt32BE(20),
    };
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff)
    return { mediaType: "image/jpeg", format: "JPEG", ...jpegSize(data) };
  if (data.length >= 10 && (ascii(data, 0, 6) === "GIF87a" || ascii(data, 0, 6) === "GIF89a"))
    return {
      mediaType: "image/gif",
      format: "GIF",
      width: data.readUInt16LE(6),
      height: data.readUInt16LE(8),
    };
  if (data.length >= 16 && ascii(data, 0, 4) === "RIFF" && ascii(data, 8, 4) === "WEBP")
    return { mediaType: "image/webp", format: "WebP", ...webpSize(data) };
  return undefined;
}
