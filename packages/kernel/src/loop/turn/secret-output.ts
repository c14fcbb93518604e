// Secret masking of tool output (docs/security/mcp.md). A tool provider whose configuration
// holds a secret — a value read with env() in agent.hcl or the global config, or one of the
// other withheld variables — was handed it to use (an MCP server's token, a search API key),
// and may print it back. Everything such a provider sends for a call is masked with the
// kernel's SecretMask (every withheld value, in every encoding it knows) before it is
// persisted, shown or sent to a model: output chunks (as they stream, values split over
// two chunks included), partial results, the result and the error. Providers given no
// secret are left alone: their output is the user's own data (a file read, a command's
// output), and masking it could make a later write lose it.
import { TextDecoder } from "node:util";
import { clone, create, type JsonObject } from "@bufbuild/protobuf";
import type { SecretMask } from "@pluggableharness/config";
import {
  type OutputStream,
  type ToolError,
  ToolErrorSchema,
  type ToolEvent_OutputChunk,
  ToolEvent_OutputChunkSchema,
  type ToolEvent_PartialResult,
  ToolEvent_PartialResultSchema,
} from "@pluggableharness/protocol/tool";
import type { LoadedProvider } from "../../plugins/providers.ts";

/** Per decoded configuration object: whether it holds a secret. */
const holdsSecret = new WeakMap<JsonObject, boolean>();

/** The mask to apply to this provider's output, or undefined when it was given no secret. */
export function outputMask(mask: SecretMask, provider: LoadedProvider): SecretMask | undefined {
  if (mask.empty) return undefined;
  const config = provider.config;
  let holds = holdsSecret.get(config);
  if (holds === undefined) {
    holds = mask.contains(JSON.stringify(config));
    holdsSecret.set(config, holds);
  }
  return holds ? mask : undefined;
}

const encoder = new TextEncoder();

/**
 * Masks a call's output chunks as they stream. A value may be split over two chunks (or a
 * UTF-8 character over two), so each stream's last `mask.longest` characters or so are held
 * back until the next chunk of that stream or the end of the call; everything before them
 * is passed on masked. Only providers given a secret pay that delay.
 */
export class ChunkMasker {
  readonly #mask: SecretMask;
  /** Per output stream: its decoder and the text held back. */
  readonly #streams = new Map<OutputStream, { decoder: TextDecoder; held: string }>();

  constructor(mask: SecretMask) {
    this.#mask = mask;
  }

  /** What of this chunk (and what was held) can be passed on now, or undefined. */
  push(chunk: ToolEvent_OutputChunk): ToolEvent_OutputChunk | undefined {
    let s = this.#streams.get(chunk.stream);
    if (!s) {
      s = { decoder: new TextDecoder(), held: "" };
      this.#streams.set(chunk.stream, s);
    }
    const { masked, rest } = this.#mask.maskPrefix(s.held + s.decoder.decode(chunk.data, { stream: true }));
    s.held = rest;
    return masked === "" ? undefined : this.#chunk(chunk.stream, masked);
  }

  /** Everything still held, masked: one chunk per stream that holds any. */
  flush(): ToolEvent_OutputChunk[] {
    const out: ToolEvent_OutputChunk[] = [];
    for (const [stream, s] of this.#streams) {
      const text = s.held + s.decoder.decode();
      s.held = "";
      if (text !== "") out.push(this.#chunk(stream, this.#mask.mask(text)));
    }
    return out;
  }

  #chunk(stream: OutputStream, text: string): ToolEvent_OutputChunk {
    return create(ToolEvent_OutputChunkSchema, { stream, data: encoder.encode(text) });
  }
}

export function maskPartial(mask: SecretMask, partial: ToolEvent_PartialResult): ToolEvent_PartialResult {
  if (!partial.payload) return partial;
  const payload = mask.maskJson(partial.payload);
  if (payload === partial.payload) return partial;
  const out = clone(ToolEvent_PartialResultSchema, partial);
  out.payload = payload;
  return out;
}

type Outcome =
  | { readonly kind: "result"; readonly payload: JsonObject }
  | { readonly kind: "error"; readonly error: ToolError };

export function maskOutcome<O extends Outcome>(mask: SecretMask, outcome: O): O {
  if (outcome.kind === "result") {
    const payload = mask.maskJson(outcome.payload);
    return payload === outcome.payload ? outcome : { ...outcome, payload };
  }
  const e = outcome.error;
  const message = mask.mask(e.message);
  const details = e.details ? mask.maskJson(e.details) : undefined;
  if (message === e.message && details === e.details) return outcome;
  const error = clone(ToolErrorSchema, e);
  error.message = message;
  if (details) error.details = details;
  return { ...outcome, error };
}
