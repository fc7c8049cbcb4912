// "Did you mean" hints for misspelt field names and kinds.

/**
 * Edit distance counting a swap of two neighbours as one edit (optimal string alignment), since
 * "nmae" for "name" is one slip of the fingers; with an early exit once it exceeds `max`.
 */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, before[j - 2]! + 1);
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    before = prev;
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
