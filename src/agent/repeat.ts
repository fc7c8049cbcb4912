// The same warning on every pass (a conflict left in git, every interval) buries everything
// else in the log. A warning is logged when it is first seen, when its text changes, and then at
// most once a window (an hour by default) while it stays; one that went away and comes back
// is new again.
export const REPEAT_WINDOW_MS = 60 * 60_000;

export class RepeatLimiter {
  private readonly last = new Map<string, { readonly text: string; readonly at: number }>();
  private seen = new Set<string>();

  constructor(private readonly now: () => number, private readonly windowMs = REPEAT_WINDOW_MS) {}

  /** Whether the warning `text` about `key` is to be logged now (and, if so, notes that it was). */
  shouldLog(key: string, text: string): boolean {
    this.seen.add(key);
    const now = this.now();
    const before = this.last.get(key);
    if (before && before.text === text && now - before.at < this.windowMs) return false;
    this.last.set(key, { text, at: now });
    return true;
  }

  /** Ends a round (a pass that planned): keys not asked about in it are forgotten. */
  endRound(): void {
    for (const key of this.last.keys()) if (!this.seen.has(key)) this.last.delete(key);
    this.seen = new Set();
  }
}
