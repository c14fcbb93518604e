// "Did you mean": the known name nearest a misspelled one (provider names in agent.hcl,
// `agent add`, slash commands).

/**
 * Edit distance between two strings: insertions, deletions, substitutions, and swapping two
 * neighbours (the commonest typo, "gti" for "git") counted as one edit.
 */
export function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      row[j] = Math.min(
        d[i - 1]![j]! + 1,
        row[j - 1]! + 1,
        d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate nearest `name`, when it is near enough to be a likely typo. */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = c.startsWith(lower) && lower.length >= 2 ? 0.5 : distance(lower, c);
    if (!best || d < best.d) best = { c, d };
  }
  return best && best.d <= Math.max(2, Math.floor(name.length / 3)) ? best.c : undefined;
}

/** ` Did you mean "<nearest>"?` for a diagnostic's detail, or "" when nothing is near. */
export function didYouMean(name: string, candidates: readonly string[]): string {
  const near = closest(name, candidates);
  return near ? ` Did you mean "${near}"?` : "";
}
