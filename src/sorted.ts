/** The first index of a sorted list of strings whose item is not before `item` (where it would be put). */
export function lowerBound(items: readonly string[], item: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid]! < item) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
