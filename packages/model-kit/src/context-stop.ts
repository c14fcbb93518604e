// A vendor stop reason that says the context window ran out (Anthropic's
// `model_context_window_exceeded`, a compatible server's `context_length_exceeded`) is not
// a finished answer: generation stopped because nothing more fits. Adapters report it as
// the context_length_exceeded ModelError (after the usage, so the attempt is still
// billed), which the kernel neither retries blindly nor reports as success.
import { ModelFailure } from "./errors.ts";

const CONTEXT_STOP = /context[_ -]?(window|length)|(window|length)[_ -]?exceeded/i;

/** True when a vendor's stop or finish reason names the context window running out. */
export function isContextWindowStop(vendorReason: string | undefined): boolean {
  return vendorReason !== undefined && CONTEXT_STOP.test(vendorReason);
}

/** The failure an adapter raises for such a stop reason. */
export function contextWindowStopFailure(vendorReason: string): ModelFailure {
  return new ModelFailure(
    "context_length_exceeded",
    `the model stopped because the context window is full (stop reason "${vendorReason}"); the answer is incomplete`,
    { retryable: false, vendorCode: vendorReason },
  );
}
