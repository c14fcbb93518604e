// Kernel-owned cache-breakpoint placement. Breakpoints go at the stable-prefix boundaries
// of the tools -> system -> static context -> conversation order: after the tool list when
// it is unchanged from the previous request, after the assembled context when its leading
// section is static, and on the conversation tail when everything before the messages is
// unchanged: after the newest message (the prefix the next request will read) and after the
// previous request's newest message (the entry this request reads, however many blocks the
// last step added). A model without explicit cache markers gets none; a request never
// carries more than MAX_CACHE_BREAKPOINTS.
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import {
  type ContextSection,
  ContextSectionSchema,
  type Message,
  MessageSchema,
  Stability,
} from "@pluggableharness/protocol/content";
import {
  type CacheBreakpoint,
  CacheBreakpoint_AfterAssembledContextSchema,
  CacheBreakpoint_AfterToolsSchema,
  CacheBreakpointSchema,
  type CachingSpec,
  type ToolDeclaration,
  ToolDeclarationSchema,
} from "@pluggableharness/protocol/model";
import { canonicalJson } from "./canonical-json.ts";

/**
 * The most breakpoints one request carries: the smallest limit among vendors with explicit
 * markers (Anthropic and Bedrock take four cache_control blocks; OpenAI GPT-5.6 writes at
 * most four breakpoints per request). Adapters for vendors with fewer map what they can.
 */
export const MAX_CACHE_BREAKPOINTS = 4;

/** A stable fingerprint of a tool list, to tell whether it changed between turns. */
export function toolListFingerprint(tools: readonly ToolDeclaration[]): string {
  // Each declaration's canonical JSON once (twice per request otherwise, over every tool);
  // the same text canonicalJson gives the list as a whole.
  return `[${tools.map(declarationJson).join(",")}]`;
}

/** Declarations are built once per session and never changed, so their text is kept. */
const declarationTexts = new WeakMap<ToolDeclaration, string>();

function declarationJson(t: ToolDeclaration): string {
  let text = declarationTexts.get(t);
  if (text === undefined) {
    text = canonicalJson(toJson(ToolDeclarationSchema, t));
    declarationTexts.set(t, text);
  }
  return text;
}

/** Each request's context is encoded twice (placement, then the prefix record): once is kept. */
const contextEncodings = new WeakMap<readonly ContextSection[], Uint8Array>();

/** The assembled context's exact bytes, to tell whether it changed between requests. */
export function contextBytes(sections: readonly ContextSection[]): Uint8Array {
  const kept = contextEncodings.get(sections);
  if (kept) return kept;
  const out = encodeSections(sections);
  contextEncodings.set(sections, out);
  return out;
}

function encodeSections(sections: readonly ContextSection[]): Uint8Array {
  const parts = sections.map((s) => toBinary(ContextSectionSchema, s));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length + 4, 0));
  let at = 0;
  for (const p of parts) {
    new DataView(out.buffer).setUint32(at, p.length);
    out.set(p, at + 4);
    at += p.length + 4;
  }
  return out;
}

/** One message's exact bytes (a rewritten history changes them). */
export function messageBytes(message: Message): Uint8Array {
  return toBinary(MessageSchema, message);
}

/** Byte equality by the runtime's memcmp (a JavaScript loop over a large context showed in profiles). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/** What the kernel remembers of a session's previous model request. */
export interface PreviousRequestPrefix {
  readonly toolsFingerprint: string;
  readonly context: Uint8Array;
  /** Index of that request's newest message, and that message's bytes. */
  readonly lastIndex: number;
  readonly lastMessage: Uint8Array;
}

/** The prefix record of a request, for the next request's placement. */
export function requestPrefix(
  tools: readonly ToolDeclaration[],
  sections: readonly ContextSection[],
  messages: readonly Message[],
): PreviousRequestPrefix | undefined {
  const last = messages.at(-1);
  if (!last) return undefined;
  return {
    toolsFingerprint: toolListFingerprint(tools),
    context: contextBytes(sections),
    lastIndex: messages.length - 1,
    lastMessage: messageBytes(last),
  };
}

export interface BreakpointInput {
  readonly caching: CachingSpec | undefined;
  readonly tools: readonly ToolDeclaration[];
  /** The previous turn's toolListFingerprint; undefined on a session's first turn. */
  readonly previousToolsFingerprint?: string;
  readonly assembledContext: readonly ContextSection[];
  /** The request's messages; the conversation tail is marked when they are given. */
  readonly messages?: readonly Message[];
  /** The session's previous request; undefined on its first one. */
  readonly previous?: PreviousRequestPrefix;
}

const afterMessage = (index: number) =>
  create(CacheBreakpointSchema, { position: { case: "afterMessageIndex", value: BigInt(index) } });

export function placeCacheBreakpoints(input: BreakpointInput): CacheBreakpoint[] {
  if (!input.caching?.explicitMarkers) return [];
  const out: CacheBreakpoint[] = [];
  const previousTools = input.previous?.toolsFingerprint ?? input.previousToolsFingerprint;
  const toolsFingerprint = toolListFingerprint(input.tools);
  const toolsStable = previousTools === undefined || previousTools === toolsFingerprint;
  if (input.tools.length > 0 && toolsStable) {
    out.push(
      create(CacheBreakpointSchema, {
        position: { case: "afterTools", value: create(CacheBreakpoint_AfterToolsSchema) },
      }),
    );
  }
  const first = input.assembledContext[0];
  if (first && first.stability === Stability.STATIC) {
    out.push(
      create(CacheBreakpointSchema, {
        position: {
          case: "afterAssembledContext",
          value: create(CacheBreakpoint_AfterAssembledContextSchema),
        },
      }),
    );
  }

  // The conversation tail: only while everything before the messages stays the same, since a
  // changed prefix invalidates every cached message after it (writing it again each request
  // would cost the write premium without ever being read).
  const messages = input.messages ?? [];
  const prev = input.previous;
  const prefixStable =
    toolsStable && (prev === undefined || sameBytes(prev.context, contextBytes(input.assembledContext)));
  if (messages.length > 0 && prefixStable) {
    const tail = messages.length - 1;
    const conversation = [tail];
    // The previous request's newest message, when it is still where it was: its entry is what
    // this request reads.
    if (
      prev &&
      prev.lastIndex < tail &&
      messages[prev.lastIndex] !== undefined &&
      sameBytes(messageBytes(messages[prev.lastIndex]!), prev.lastMessage)
    ) {
      conversation.unshift(prev.lastIndex);
    }
    // Within the limit, the newest positions are kept first (they cover the longest prefix).
    const room = Math.max(0, MAX_CACHE_BREAKPOINTS - out.length);
    out.push(...conversation.slice(-room).map(afterMessage));
  }
  return out.slice(0, MAX_CACHE_BREAKPOINTS);
}

/**
 * Config-load lint: a dynamic section declared before a static one invalidates the cache
 * prefix of everything after it whenever it changes. Returns one warning per such pair
 * (declaration order is the author's call, so this never reorders).
 */
export function stabilityOrderWarnings(
  sections: readonly { readonly provider: string; readonly stability: Stability }[],
): string[] {
  const warnings: string[] = [];
  let firstDynamic: string | undefined;
  for (const s of sections) {
    if (s.stability === Stability.DYNAMIC && firstDynamic === undefined) firstDynamic = s.provider;
    if (s.stability === Stability.STATIC && firstDynamic !== undefined) {
      warnings.push(
        `context provider "${firstDynamic}" (dynamic) is declared before "${s.provider}" (static); its changes invalidate the prompt-cache prefix for "${s.provider}"`,
      );
    }
  }
  return warnings;
}
