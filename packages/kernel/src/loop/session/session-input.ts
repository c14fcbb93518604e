// What starts a session's run, as the run queue holds it and the driver runs it. A leaf,
// so the queue and the driver need nothing of session.ts.
import type { ContentBlock } from "@pluggableharness/protocol/content";
import type { DirectInvocation } from "./direct-invocation.ts";

/** What a run starts from: a user message, or a tool call the operator made directly. */
export type SessionInput =
  | { readonly kind: "message"; readonly content: ContentBlock[] }
  | { readonly kind: "invoke"; readonly invocation: DirectInvocation }
  /** "Compact now" (/compact): one compaction pass, no model turn. */
  | { readonly kind: "compact"; readonly instructions: string };
