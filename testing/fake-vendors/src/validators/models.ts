// Per-model request rules the real APIs enforce, by model id. Only rules with a documented
// or widely reproduced 400 behind them are here (README, "Validators").

/** Claude from Opus 4.7 on (Opus 4.7/4.8, every 5-series model, Fable, Mythos) refuses sampling parameters. */
const CLAUDE_NO_SAMPLING =
  /^claude-(?:opus-4-(?:[7-9]|\d{2,})|(?:opus|sonnet|haiku)-(?:[5-9]|\d{2,})|fable|mythos)/;

export function claudeRefusesSampling(model: string): boolean {
  return CLAUDE_NO_SAMPLING.test(model);
}

/**
 * Whether an OpenAI model takes temperature/top_p at this reasoning effort: the o-series,
 * GPT-5 (and its mini/nano/pro) and every codex model never do; GPT-5.1 and later only at
 * effort "none" (the default up to GPT-5.4, "medium" after); older models always do.
 */
export function openaiAcceptsSampling(model: string, effort: string | undefined): boolean {
  if (/^o\d/.test(model) || model.includes("codex") || /^gpt-5(?:-|$)/.test(model)) return false;
  const dotted = /^gpt-(?:5\.(\d+)|([6-9])\b)/.exec(model);
  if (!dotted) return true;
  const minor = dotted[1] !== undefined ? Number(dotted[1]) : Number.POSITIVE_INFINITY;
  const inForce = effort ?? (minor <= 4 ? "none" : "medium");
  return inForce === "none";
}

/** Gemini 3 and later refuse a current-turn function call without its thought signature. */
export function geminiRequiresSignatures(model: string): boolean {
  return /^gemini-(?:[3-9]|\d{2,})[.-]/.test(model);
}
