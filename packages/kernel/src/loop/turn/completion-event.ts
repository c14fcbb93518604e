// What every message event recording a model's answer carries, billed attempt or kept
// answer alike: the message, the model that wrote it, its usage, cost and request id.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MessageEventSchema } from "@pluggableharness/protocol/event";
import type { AccumulatedCompletion } from "../../domain/index.ts";
import type { ResolvedCandidate } from "./model-call.ts";

export function completionEventFields(
  turnId: string,
  candidate: ResolvedCandidate,
  completion: AccumulatedCompletion,
): MessageInitShape<typeof MessageEventSchema> {
  return {
    message: completion.message,
    turnId,
    model: { provider: candidate.provider.name, id: candidate.spec.id },
    usage: [...completion.usage],
    costUsd: completion.costUsd,
    ...(completion.providerRequestId ? { providerRequestId: completion.providerRequestId } : {}),
  };
}
