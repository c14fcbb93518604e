// One Chat Completions completion end to end: translate, send once, stream back. The xai and
// openai-compatible providers differ only in the options and the usage mapping they pass.
import {
  type AdapterCall,
  StopSequenceMatcher,
  type StreamEventInit,
  type UsageInit,
  WireNotices,
} from "@pluggableharness/model-kit";
import type { StreamCompletionRequest } from "@pluggableharness/protocol/model";
import { buildChatRequest, type ChatRequestOptions } from "./chat-request.ts";
import { parseChatStream } from "./chat-stream.ts";
import { streamOpenAI } from "./run.ts";

/** Stream oddities already reported by this process (each is logged once, not every turn). */
const WIRE_SEEN = new Set<string>();

export interface ChatCompletionSetup {
  /** The full `…/chat/completions` URL. */
  url: string;
  headers: Record<string, string>;
  request: ChatRequestOptions;
  usage: (usage: Record<string, unknown>, rawFrame: string) => UsageInit;
  requestIdHeader?: string;
}

export async function* streamChatCompletion<S>(
  req: StreamCompletionRequest,
  call: AdapterCall<S>,
  setup: ChatCompletionSetup,
): AsyncGenerator<StreamEventInit> {
  const { body, names, droppedReasoning, droppedSampling } = buildChatRequest(
    req,
    call.model,
    call.self,
    setup.request,
  );
  if (droppedSampling.length > 0)
    call.log.warn(`${call.model.id} does not accept ${droppedSampling.join(", ")}; not sent`);
  if (droppedReasoning > 0)
    call.log.debug("left out reasoning blocks Chat Completions cannot carry", { blocks: droppedReasoning });
  const stop = new StopSequenceMatcher(req.params?.stopSequences ?? []);
  yield* streamOpenAI(
    {
      url: setup.url,
      headers: setup.headers,
      body,
      signal: call.signal,
      log: call.log,
      ...(setup.requestIdHeader ? { requestIdHeader: setup.requestIdHeader } : {}),
    },
    ({ response, rateLimits }) =>
      parseChatStream(response.body, {
        names,
        stop,
        rateLimits,
        usage: setup.usage,
        thinking: call.model.thinking !== undefined,
        signal: call.signal,
        notices: new WireNotices(call.self.name, call.log, WIRE_SEEN),
      }),
  );
}
