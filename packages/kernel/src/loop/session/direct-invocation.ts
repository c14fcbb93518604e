// A tool call the operator asked for without a model turn, as the frontend hub queues it
// and the loop runs it (direct-invoke.ts). Plain types, so the hub needs nothing of the loop.
import type { JsonObject } from "@bufbuild/protobuf";
import type { SessionTool } from "../tool-registry.ts";

/** Who asked for the call, for the history message and the synthetic reason. */
export type InvocationOrigin =
  | { readonly kind: "slash_command"; readonly name: string; readonly args: string }
  | { readonly kind: "action_trigger"; readonly nodeId: string }
  /** A client of `agent mcp serve` (it names itself in initialize). */
  | { readonly kind: "mcp_client"; readonly client: string };

/** What a direct call came to, for a caller that waits for it (SessionHandle.invoke). */
export interface DirectInvokeOutcome {
  /** How the model would read it: the result's text, or the error or denial. */
  readonly content: string;
  readonly isError: boolean;
  readonly denied: boolean;
  /** The result payload, when the call succeeded. */
  readonly payload?: JsonObject;
  readonly cancelled: boolean;
}

export interface DirectInvocation {
  readonly tool: SessionTool;
  /** Already mapped and checked against the tool's input schema. */
  readonly args: JsonObject;
  readonly origin: InvocationOrigin;
  /** Called once the call has gone through the gate (or was cancelled). */
  readonly onDone?: (outcome: DirectInvokeOutcome) => void;
}
