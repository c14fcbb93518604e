// The conversation the models are sent: the messages of the session in order, each tool_use
// answered. Reading is free; writing has two forms, each with its owners. Appending adds what
// happened (the turn's assistant messages, the user messages the session log records, a
// sub-agent's forked parent messages); replacing puts a whole new history in place (a
// compaction's rewrite, or the history a resume rebuilt from the session file).
import type { Message } from "@pluggableharness/protocol/content";

export class Conversation {
  #messages: Message[];

  constructor(messages: Message[] = []) {
    this.#messages = messages;
  }

  /** The messages now (the same array until the next replace()). */
  get messages(): readonly Message[] {
    return this.#messages;
  }

  get length(): number {
    return this.#messages.length;
  }

  append(message: Message): void {
    this.#messages.push(message);
  }

  replace(messages: Message[]): void {
    this.#messages = messages;
  }
}
