// The duplicate check's table: for each identity key of one kind and tenant, the number its
// first definition was given. A Map<string, number> did this, and at 200,000 firmwares its
// lookups were some 3% of a validate (perf: Builtins_FindOrderedHashMapEntry, 0.1% at 20,000): an
// unsuccessful lookup, the usual one, walks a bucket's chain and reads every key string it meets,
// each a cache miss in a heap of hundreds of megabytes. Here a lookup reads one slot, the key's
// hash and number side by side in a typed array, and reads a key string only when the hashes
// agree. Pure and in memory: the answers are a Map's (property-tested against one).
//
// Hostile keys: the hash is seeded at random per table, and a key finds its place within
// MAX_PROBES slots or goes to an ordinary Map, so keys made to collide cost a Map's time, never
// a quadratic walk.

/** Slots a lookup walks from the key's home slot before it asks the overflow Map. */
export const MAX_PROBES = 32;

/** Slots of a new table (a power of two; doubled when half are taken). */
const INITIAL_SLOTS = 64;

/** A seeded 32-bit hash of a string (a multiply-xorshift per character, then a final mix). */
export type KeyHash = (key: string, seed: number) => number;

export const seededHash: KeyHash = (key, seed) => {
  let h = seed ^ key.length;
  for (let i = 0; i < key.length; i++) {
    h = Math.imul(h ^ key.charCodeAt(i), 0x5bd1e995);
    h ^= h >>> 15;
  }
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
};

export class FirstSeen {
  /** Pairs: [hash, entry + 1]; 0 in the second: an empty slot. */
  private slots: Int32Array;
  private mask: number;
  private readonly keys: string[] = [];
  private readonly values: number[] = [];
  /** Keys that found no empty slot within MAX_PROBES, and their entries. */
  private overflow: Map<string, number> | undefined;
  /** Where the last find that missed would put its key (-1: in the overflow Map), and which key and hash that was. */
  private vacant = -1;
  private vacantKey: string | undefined;
  private vacantHash = 0;
  private readonly seed: number;
  private readonly hash: KeyHash;

  /** `hash` is for tests (collisions on purpose); the seed is random per table. */
  constructor(opts: { hash?: KeyHash } = {}) {
    this.hash = opts.hash ?? seededHash;
    this.seed = (Math.random() * 0x100000000) | 0;
    this.slots = new Int32Array(2 * INITIAL_SLOTS);
    this.mask = INITIAL_SLOTS - 1;
  }

  get size(): number {
    return this.keys.length;
  }

  /** The value of `key`'s first definition, or -1 (then `add(key, value)` records one). */
  find(key: string): number {
    const h = this.hash(key, this.seed);
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    for (let probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & mask) {
      const entry = slots[2 * i + 1]!;
      if (entry === 0) {
        this.vacant = i; this.vacantKey = key; this.vacantHash = h;
        return -1;
      }
      if (slots[2 * i] === h && this.keys[entry - 1] === key) return this.values[entry - 1]!;
    }
    const known = this.overflow?.get(key);
    if (known !== undefined) return this.values[known]!;
    this.vacant = -1; this.vacantKey = key; this.vacantHash = h;
    return -1;
  }

  /** Records `key` (which must not be recorded yet) as first defined with `value` (>= 0). */
  add(key: string, value: number): void {
    if (!(value >= 0)) throw new Error(`FirstSeen: a value is a number >= 0, not ${value}`);
    if (this.vacantKey !== key && this.find(key) !== -1) throw new Error(`FirstSeen: ${key} is recorded already`);
    const entry = this.keys.length;
    this.keys.push(key);
    this.values.push(value);
    if (this.vacant < 0) (this.overflow ??= new Map()).set(key, entry);
    else {
      this.slots[2 * this.vacant] = this.vacantHash;
      this.slots[2 * this.vacant + 1] = entry + 1;
    }
    this.vacantKey = undefined;
    // Half full at most: a lookup that misses meets an empty slot within a few.
    if (2 * this.keys.length > this.mask + 1) this.grow();
  }

  private grow(): void {
    const old = this.slots;
    const overflow = this.overflow;
    const capacity = (this.mask + 1) * 2;
    this.slots = new Int32Array(capacity * 2);
    this.mask = capacity - 1;
    this.overflow = undefined;
    // The hashes are kept in the slots: only the overflow's keys are hashed again.
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.place(old[i]!, old[i + 1]!);
    if (overflow !== undefined) {
      for (const [key, entry] of overflow) this.place(this.hash(key, this.seed), entry + 1);
    }
  }

  /** Puts an entry (its number + 1) in the first empty slot from its hash's home, or the overflow Map. */
  private place(h: number, entry: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    for (let probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & mask) {
      if (slots[2 * i + 1] === 0) {
        slots[2 * i] = h;
        slots[2 * i + 1] = entry;
        return;
      }
    }
    (this.overflow ??= new Map()).set(this.keys[entry - 1]!, entry - 1);
  }
}
