// Content checks before dispatch: a block the target model cannot take is rejected as an
// invalid_request with a message naming where it is — never silently dropped.
import type { ContentBlock, ContextSection, Message } from "@pluggableharness/protocol/content";
import type { ModelSpec, ToolDeclaration } from "@pluggableharness/protocol/model";
import { ClassifiedModelError } from "./model-errors.ts";

export interface ContentProblem {
  /** e.g. "messages[2].content[0]" or "messages[3].content[1].tool_result.content[0]". */
  readonly location: string;
  readonly message: string;
}

function* walk(blocks: readonly ContentBlock[], where: string): Generator<[ContentBlock, string]> {
  for (const [i, block] of blocks.entries()) {
    const location = `${where}[${i}]`;
    yield [block, location];
    if (block.block.case === "toolResult")
      yield* walk(block.block.value.content, `${location}.tool_result.content`);
  }
}

/** Every block of the request the model cannot accept. */
export function contentProblems(
  spec: ModelSpec,
  request: {
    readonly messages: readonly Message[];
    readonly assembledContext?: readonly ContextSection[];
    readonly tools?: readonly ToolDeclaration[];
  },
): ContentProblem[] {
  const problems: ContentProblem[] = [];
  const inspect = (blocks: readonly ContentBlock[], where: string) => {
    for (const [block, location] of walk(blocks, where)) {
      const b = block.block;
      if (b.case === "image" && !spec.supportsVision) {
        problems.push({
          location,
          message: `${location}: ${b.value.mediaType ? `an ${b.value.mediaType} image` : "an image"} cannot be sent to ${spec.id}, which has no vision support`,
        });
      } else if (b.case === "document" && !spec.supportsDocuments) {
        const name = b.value.filename ? ` "${b.value.filename}"` : "";
        problems.push({
          location,
          message: `${location}: the ${b.value.mediaType ? `${b.value.mediaType} ` : ""}document${name} cannot be sent to ${spec.id}, which has no document support`,
        });
      }
    }
  };
  for (const [i, m] of request.messages.entries()) inspect(m.content, `messages[${i}].content`);
  for (const [i, s] of (request.assembledContext ?? []).entries())
    inspect(s.content, `assembled_context[${i}].content`);
  if ((request.tools?.length ?? 0) > 0 && !spec.supportsToolUse) {
    problems.push({
      location: "tools",
      message: `tools are declared but ${spec.id} does not support tool use`,
    });
  }
  return problems;
}

/** Throws an invalid_request ClassifiedModelError listing every problem, if any. */
export function assertContentSupported(
  spec: ModelSpec,
  request: Parameters<typeof contentProblems>[1],
): void {
  const problems = contentProblems(spec, request);
  if (problems.length === 0) return;
  throw new ClassifiedModelError("invalid_request", problems.map((p) => p.message).join("; "), {
    retryable: false,
  });
}
