// The conversation the models are sent: the messages of the session in order, each tool_use
// answered. Reading is free; it has exactly two writers. The session log appends a user
// message as it records it (the prompt, tool results, kernel instructions, a resume's repair:
// session-log.ts); the turn's conversation step appends the model's answers and puts a
// compaction's rewrite in place (loop/turn/append.ts). What a session starts from (a resume's
// rebuilt history, a sub-agent's fork of its parent's) is given to the constructor.
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
