// Stop sequences enforced by the adapter rather than by the vendor. A vendor that honours a
// stop parameter cuts the sequence out and rarely says which one matched (OpenAI-compatible
// servers answer a plain "stop", Gemini a plain STOP), and some endpoints have no such
// parameter at all; yet StreamEvent.stop must name the match. So the adapter does not send the
// parameter and watches the text itself: text is held back only while it could still be the
// start of a sequence, the text before the earliest match is forwarded, and everything the
// model produces after it is for the adapter to drop (docs/decisions/vendors.md).
export class StopSequenceMatcher {
  readonly #sequences: string[];
  #held = "";
  #matched: string | undefined;

  constructor(sequences: readonly string[]) {
    this.#sequences = [...new Set(sequences.filter((s) => s !== ""))];
  }

  get active(): boolean {
    return this.#sequences.length > 0;
  }

  /** The sequence that matched, once one has. */
  get matched(): string | undefined {
    return this.#matched;
  }

  /** Feeds model text; returns the text that is safe to forward now. */
  push(text: string): string {
    if (this.#matched !== undefined) return "";
    if (this.#sequences.length === 0) return text;
    const buffer = this.#held + text;
    let at = -1;
    let which: string | undefined;
    for (const s of this.#sequences) {
      const i = buffer.indexOf(s);
      if (i >= 0 && (at < 0 || i < at || (i === at && s.length > (which?.length ?? 0)))) {
        at = i;
        which = s;
      }
    }
    if (which !== undefined) {
      this.#matched = which;
      this.#held = "";
      return buffer.slice(0, at);
    }
    // Hold back the longest tail that is a proper prefix of some sequence.
    let keep = 0;
    for (const s of this.#sequences) {
      for (let n = Math.min(s.length - 1, buffer.length); n > keep; n--) {
        if (buffer.endsWith(s.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.#held = buffer.slice(buffer.length - keep);
    return buffer.slice(0, buffer.length - keep);
  }

  /** Releases held-back text (the text run ended without a match). */
  flush(): string {
    const out = this.#held;
    this.#held = "";
    return out;
  }
}
