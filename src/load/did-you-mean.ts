// "Did you mean" hints for misspelt field names and kinds.

/** Levenshtein distance, with an early exit once it exceeds `max`. */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The closest candidate, when it is close enough to be a likely typo: at most a third of the
 * word's length in edits (minimum 1, maximum 3), ties broken alphabetically for stable output.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const max = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = max + 1;
  const lower = word.toLowerCase();
  for (const c of [...candidates].sort()) {
    if (c === word) continue;
    const d = editDistance(lower, c.toLowerCase(), max);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** `; did you mean "x"?` or the empty string. */
export function hint(word: string, candidates: Iterable<string>): string {
  const m = didYouMean(word, candidates);
  return m === undefined ? '' : `; did you mean "${m}"?`;
}
