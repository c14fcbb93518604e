// The one shape every typed failure in the harness shares: a message for people and a
// stable code for programs, so callers branch on the code and never parse the message.
// It sits here, in the package every other one already depends on, so state, goplugin,
// registry and the kernel can all extend it without a new layer.

export class CodedError<C extends string | number = string> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
