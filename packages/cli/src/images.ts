// `agent run --image <file>` (repeatable): images sent with the headless prompt as
// image blocks. A file that is not a PNG, JPEG, GIF or WebP image (by its first bytes,
// whatever its name), or is over MAX_IMAGE_BYTES, is a usage error before anything
// starts. The blocks carry the file's bytes as they are (the session file keeps them);
// the kernel fits each image to the model it is sent to (loop/turn/image-fit.ts). Whether the
// model can take images is the kernel's call too: one without vision answers invalid_request.
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { imageBlock } from "@pluggableharness/kernel";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { EXIT } from "./exit-codes.ts";
import { CliError } from "./io.ts";

/** What the session file keeps of one image; far above any vendor's limit, since images are fitted. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

/** The media type a file's first bytes say it is, if it is an image the vendors take. */
export function sniffImage(bytes: Uint8Array): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes[8] === 0x57 &&
    bytes[9] === 0x45 &&
    bytes[10] === 0x42 &&
    bytes[11] === 0x50
  )
    return "image/webp";
  return undefined;
}

export function readImages(files: readonly string[], cwd: string): ContentBlock[] {
  return files.map((f) => {
    const path = resolve(cwd, f);
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      throw new CliError(`--image: ${f}: no such file`, EXIT.USAGE);
    }
    if (size > MAX_IMAGE_BYTES)
      throw new CliError(
        `--image: ${f} is ${size} bytes; images are attached up to ${MAX_IMAGE_BYTES} bytes`,
        EXIT.USAGE,
      );
    const data = readFileSync(path);
    const mediaType = sniffImage(data);
    if (!mediaType) throw new CliError(`--image: ${f} is not a PNG, JPEG, GIF or WebP image`, EXIT.USAGE);
    return imageBlock(mediaType, new Uint8Array(data));
  });
}
