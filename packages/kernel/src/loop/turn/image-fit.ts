// Images are fitted to the target model before each request (docs/decisions/images.md): the session keeps the original bytes (history is exact), the
// plugin receives a copy within the model's ModelSpec.image_limits (the kernel's
// conservative default when a vision model declares none). Fitting is deterministic and
// cached by content, so a long session re-encodes nothing and prompt caching sees the same
// bytes every turn. An image that cannot be fitted becomes a text note saying why; the
// turn goes on.
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type FitResult, fitImage, type ImageLimits } from "@pluggableharness/image-kit";
import {
  type ContentBlock,
  ContentBlockSchema,
  type Message,
  MessageSchema,
  ToolResultBlockSchema,
} from "@pluggableharness/protocol/content";
import type { ModelSpec } from "@pluggableharness/protocol/model";

/**
 * For a vision model that declares no limits: under every first-party vendor's (Anthropic's
 * 5 MB of base64 per image and 2000 px once a request has over 20 images, OpenAI's 2048 px
 * high-detail box), so an undeclared model is never sent what a known one would refuse.
 */
export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxBytes: 3_932_160, maxLongEdge: 2000, maxPixels: 0 };

/** The limits every image of a request carrying `imageCount` images must meet on `spec`. */
export function imageLimitsFor(spec: ModelSpec, imageCount: number): ImageLimits {
  const l = spec.imageLimits;
  if (!l) return DEFAULT_IMAGE_LIMITS;
  let maxLongEdge = l.maxLongEdge;
  if (l.manyImagesThreshold > 0 && imageCount > l.manyImagesThreshold && l.manyImagesLongEdge > 0)
    maxLongEdge = maxLongEdge > 0 ? Math.min(maxLongEdge, l.manyImagesLongEdge) : l.manyImagesLongEdge;
  return { maxBytes: Number(l.maxBytes), maxLongEdge, maxPixels: Number(l.maxPixels) };
}

/** Fit results by content and limits, least recently used dropped past a byte budget. */
export class ImageFitCache {
  private readonly entries = new Map<string, { result: FitResult; cost: number }>();
  private readonly digests = new WeakMap<Uint8Array, string>();
  private used = 0;
  /** Fits computed (not served from the cache), for tests and traces. */
  computed = 0;

  private readonly budgetBytes: number;

  constructor(budgetBytes = 64 * 1024 * 1024) {
    this.budgetBytes = budgetBytes;
  }

  /** The content digest of `data`, computed once per buffer. */
  digest(data: Uint8Array): string {
    let digest = this.digests.get(data);
    if (digest === undefined) {
      digest = createHash("sha256").update(data).digest("hex");
      this.digests.set(data, digest);
    }
    return digest;
  }

  fit(data: Uint8Array, mediaType: string, limits: ImageLimits): FitResult {
    const digest = this.digest(data);
    const key = `${digest}|${mediaType}|${limits.maxBytes}|${limits.maxLongEdge}|${limits.maxPixels}`;
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.result;
    }
    let result: FitResult;
    try {
      result = fitImage(data, mediaType, limits);
    } catch (err) {
      // fitImage classifies what it knows; anything else (memory) is still not a failed turn.
      result = { kind: "unfit", reason: `the image could not be processed: ${(err as Error).message}` };
    }
    this.computed++;
    const cost = 256 + (result.kind === "fitted" ? result.data.length : 0);
    this.entries.set(key, { result, cost });
    this.used += cost;
    for (const [k, v] of this.entries) {
      if (this.used <= this.budgetBytes || k === key) break;
      this.entries.delete(k);
      this.used -= v.cost;
    }
    return result;
  }
}

/** The process's cache: sessions (and sub-agents) share fits of the same image. */
export const imageFitCache = new ImageFitCache();

/** What happened to one image of a request, for the log and the operator. */
export interface ImageFitNote {
  readonly kind: "fitted" | "unfit";
  readonly text: string;
  /** Model and content digest: a note is shown once per image, model and session. */
  readonly key: string;
}

const textBlock = (text: string): ContentBlock =>
  create(ContentBlockSchema, { block: { case: "text", value: { text } } });

function countImages(blocks: readonly ContentBlock[]): number {
  let n = 0;
  for (const b of blocks) {
    if (b.block.case === "image" && b.block.value.source.case === "data") n++;
    else if (b.block.case === "toolResult") n += countImages(b.block.value.content);
  }
  return n;
}

/** Images already reported to each session, so a note appears once, not every turn. */
const reported = new WeakMap<object, Set<string>>();

/** The notes not yet reported for `session`, marked reported. */
export function newNotes(session: object, notes: readonly ImageFitNote[]): ImageFitNote[] {
  let seen = reported.get(session);
  if (!seen) {
    seen = new Set();
    reported.set(session, seen);
  }
  const fresh: ImageFitNote[] = [];
  for (const n of notes) {
    const k = `${n.kind}:${n.key}`;
    if (seen.has(k)) continue;
    seen.add(k);
    fresh.push(n);
  }
  return fresh;
}

/**
 * `messages` with every inline image fitted to `spec` (the same objects where nothing
 * changed), and a note for each image that was changed or could not be sent.
 */
export function fitRequestImages(
  messages: readonly Message[],
  spec: ModelSpec,
  cache: ImageFitCache = imageFitCache,
): { messages: Message[]; notes: ImageFitNote[] } {
  let count = 0;
  for (const m of messages) count += countImages(m.content);
  if (count === 0 || !spec.supportsVision) return { messages: [...messages], notes: [] };
  const limits = imageLimitsFor(spec, count);
  const notes: ImageFitNote[] = [];

  const fitBlocks = (blocks: readonly ContentBlock[]): ContentBlock[] | undefined => {
    let out: ContentBlock[] | undefined;
    blocks.forEach((b, i) => {
      let replacement: ContentBlock[] | undefined;
      if (b.block.case === "image" && b.block.value.source.case === "data") {
        const { mediaType } = b.block.value;
        const data = b.block.value.source.value;
        const r = cache.fit(data, mediaType, limits);
        const key = `${spec.id}:${cache.digest(data)}`;
        if (r.kind === "fitted") {
          const o = r.original;
          const resized = o.width !== r.image.width || o.height !== r.image.height;
          const text = resized
            ? `[image downscaled from ${o.width}x${o.height} to ${r.image.width}x${r.image.height} pixels to fit ${spec.id}]`
            : "";
          replacement = [
            create(ContentBlockSchema, {
              block: {
                case: "image",
                value: { mediaType: r.image.mediaType, source: { case: "data", value: r.data } },
              },
            }),
            ...(text ? [textBlock(text)] : []),
          ];
          notes.push({
            kind: "fitted",
            key,
            text: resized
              ? `an image (${o.mediaType}, ${o.width}x${o.height}, ${o.bytes} bytes) was sent to ${spec.id} as ${r.image.mediaType}, ${r.image.width}x${r.image.height}, ${r.image.bytes} bytes`
              : `an image declared ${mediaType} is ${r.image.mediaType}; sent as such`,
          });
        } else if (r.kind === "unfit") {
          replacement = [textBlock(`[image not sent: ${r.reason}]`)];
          notes.push({ kind: "unfit", key, text: `an image was not sent to ${spec.id}: ${r.reason}` });
        }
      } else if (b.block.case === "toolResult") {
        const inner = fitBlocks(b.block.value.content);
        if (inner)
          replacement = [
            create(ContentBlockSchema, {
              block: {
                case: "toolResult",
                value: create(ToolResultBlockSchema, { ...b.block.value, content: inner }),
              },
            }),
          ];
      }
      if (replacement) {
        out ??= blocks.slice(0, i);
        out.push(...replacement);
      } else if (out) out.push(b);
    });
    return out;
  };

  const out = messages.map((m) => {
    const content = fitBlocks(m.content);
    return content ? create(MessageSchema, { ...m, content }) : m;
  });
  return { messages: out, notes };
}
