// Polling a tmux pane for the terminal tests (pty-*.test.ts): each test keeps its own
// tmux socket and pane names; this is the wait they share.

/** Resolves with `read()`'s text once it shows `pattern`; throws with the pane's tail after `timeoutMs`. */
export async function waitForText(
  read: () => string,
  pattern: string | RegExp,
  timeoutMs = 20_000,
): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = read();
    if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${pattern}:\n${text.split("\n").slice(-60).join("\n")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
