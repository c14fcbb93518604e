// Done detection. The baseline: an assistant message without tool_use blocks ends the
// loop. On top: a call to an operation declaring terminates_turn ends the loop right
// after that call's post-tool-call hook, whatever other calls the message held.
//
// Whatever the terminating call's outcome (a result, an error, a denial), its hook having
// fired ends the loop: the seed makes the DoneCheck depend on the hook alone, and the model
// meant to stop; a failed or denied completion report reaches the user, who can answer it
// (docs/decisions/testing.md, "Loop conformance").
import type { Message } from "@pluggableharness/protocol/content";
import { ToolKind, type ToolSchema } from "@pluggableharness/protocol/tool";

export interface ToolUseRef {
  readonly id: string;
  readonly name: string;
}

export type DoneCheck =
  /** No tool_use blocks: the loop ends successfully now. */
  | { readonly kind: "done_no_tool_calls" }
  /** Tool calls to run; `terminatingCallIds` end the loop once their post-tool-call fired. */
  | {
      readonly kind: "continue";
      readonly toolUses: readonly ToolUseRef[];
      readonly terminatingCallIds: readonly string[];
    };

/** Classifies an assistant message; `resolve` maps a tool_use name to its ToolSchema. */
export function checkDone(
  message: Message,
  resolve: (toolName: string) => ToolSchema | undefined,
): DoneCheck {
  const toolUses: ToolUseRef[] = [];
  for (const block of message.content) {
    if (block.block.case === "toolUse")
      toolUses.push({ id: block.block.value.id, name: block.block.value.name });
  }
  if (toolUses.length === 0) return { kind: "done_no_tool_calls" };
  const terminatingCallIds = toolUses
    .filter((u) => {
      const schema = resolve(u.name);
      return schema !== undefined && schema.kind === ToolKind.RESOURCE && schema.terminatesTurn === true;
    })
    .map((u) => u.id);
  return { kind: "continue", toolUses, terminatingCallIds };
}

export type CallOutcomeKind = "succeeded" | "failed" | "denied" | "cancelled";

/**
 * Tracks post-tool-call hooks within one turn. `postToolCallFired` returns true (the
 * DoneCheck succeeded) the moment a terminating call's hook has fired, whatever the
 * call's outcome.
 */
export class TurnDoneTracker {
  readonly #terminating: ReadonlySet<string>;
  #done = false;

  constructor(check: DoneCheck) {
    this.#terminating = new Set(check.kind === "continue" ? check.terminatingCallIds : []);
    this.#done = check.kind === "done_no_tool_calls";
  }

  get done(): boolean {
    return this.#done;
  }

  postToolCallFired(callId: string): boolean {
    if (this.#terminating.has(callId)) this.#done = true;
    return this.#done;
  }
}
