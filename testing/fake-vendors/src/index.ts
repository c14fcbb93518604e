// @pluggableharness/fake-vendors: loopback servers that speak each model vendor's wire format.

export type { Corpus, CorpusError, CorpusExpectation, CorpusStream, CorpusVendor } from "./corpus.ts";
export { corpusErrorResponse, corpusFrames, corpusResponse, corpusText, loadCorpus } from "./corpus.ts";
export type { CacheBill, CacheRule, CacheSegment } from "./prompt-cache.ts";
export { estimateTokens, PromptCacheStore } from "./prompt-cache.ts";
export { goDuration } from "./ratelimits.ts";
export { describeRequest, maskedHeaders, maskSecret } from "./recording.ts";
export { unreachableUrl } from "./refuse.ts";
export type { ServerVendor } from "./router.ts";
export { VENDOR_IDS } from "./router.ts";
export * as scenarios from "./scenarios.ts";
export type { FakeVendor, FakeVendorOptions } from "./server.ts";
export {
  modelNotFound,
  startAnthropicFake,
  startCombinedFake,
  startFakeVendor,
  startGeminiFake,
  startOpenAIChatFake,
  startOpenAICompatibleFake,
  startOpenAIResponsesFake,
  startXaiFake,
} from "./server.ts";
export type { SseEvent } from "./sse-client.ts";
export { parseSse, readSse, streamSse } from "./sse-client.ts";
export type * from "./types.ts";
export { validateAnthropic } from "./validators/anthropic.ts";
export { validateGemini } from "./validators/gemini.ts";
export { validateChat } from "./validators/openai-chat.ts";
export { RESPONSES_INPUT_ITEM_TYPES, validateResponses } from "./validators/openai-responses.ts";
export type { Quirks } from "./wire/common.ts";
export { CHAT_DIALECTS } from "./wire/openai-chat.ts";
