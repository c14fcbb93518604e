// @pluggableharness/openai-wire: OpenAI-family wire pieces shared by the openai, xai and
// openai-compatible model providers.

export { type ChatCompletionSetup, streamChatCompletion } from "./chat.ts";
export {
  buildChatRequest,
  type ChatRequest,
  type ChatRequestOptions,
  passThroughOptions,
  requestToolNames,
} from "./chat-request.ts";
export { type ChatStreamOptions, parseChatStream } from "./chat-stream.ts";
export {
  argumentsText,
  documentDataUrl,
  documentFilename,
  imageUrl,
  toolResultText,
} from "./content.ts";
export {
  classifyHttpError,
  classifyStreamError,
  errorInfoOf,
  type OpenAIErrorInfo,
  parseErrorBody,
  retryHintFromMessage,
} from "./errors.ts";
export { OPENAI_RATE_LIMIT_HEADERS, openaiRateLimits } from "./ratelimits.ts";
export { type OpenAICall, type OpenedStream, streamOpenAI } from "./run.ts";
export { chatUsage, decimalText, detailComponents, num, plainDecimal } from "./usage.ts";
