// The live index of one tenant's firmware records: version_number → the records with that
// number (LiveTenant.firmwares). Nearly every number has one record; a map of one-element lists
// kept a list for each (an array and its elements, 56 bytes: 11 MB at 200,000 records, held by
// watch between passes). Here a number with one record holds the record itself, and the list a
// reader asks for is made then. Readers see a ReadonlyMap of lists, as before.
import type { LiveFirmware } from './model/index.js';

type Held = LiveFirmware | readonly LiveFirmware[];

const listOf = (held: Held): readonly LiveFirmware[] => (Array.isArray(held) ? held as readonly LiveFirmware[] : [held as LiveFirmware]);

export class FirmwareIndex implements ReadonlyMap<string, readonly LiveFirmware[]> {
  private readonly held: Map<string, Held>;

  constructor(entries?: Iterable<readonly [string, readonly LiveFirmware[]]>) {
    this.held = new Map();
    if (entries !== undefined) for (const [k, v] of entries) this.set(k, v);
  }

  /** A copy to change (the refresh of some records on top of a full read): the records are shared. */
  static copyOf(index: ReadonlyMap<string, readonly LiveFirmware[]>): FirmwareIndex {
    if (!(index instanceof FirmwareIndex)) return new FirmwareIndex(index);
    const out = new FirmwareIndex();
    for (const [k, v] of index.held) out.held.set(k, v);
    return out;
  }

  set(version: string, list: readonly LiveFirmware[]): this {
    this.held.set(version, list.length === 1 ? list[0]! : list);
    return this;
  }

  get size(): number {
    return this.held.size;
  }

  get(version: string): readonly LiveFirmware[] | undefined {
    const held = this.held.get(version);
    return held === undefined ? undefined : listOf(held);
  }

  has(version: string): boolean {
    return this.held.has(version);
  }

  forEach(fn: (list: readonly LiveFirmware[], version: string, map: ReadonlyMap<string, readonly LiveFirmware[]>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.held) fn.call(thisArg, listOf(v), k, this);
  }

  keys(): MapIterator<string> {
    return this.held.keys();
  }

  *values(): MapIterator<readonly LiveFirmware[]> {
    for (const v of this.held.values()) yield listOf(v);
  }

  *entries(): MapIterator<[string, readonly LiveFirmware[]]> {
    for (const [k, v] of this.held) yield [k, listOf(v)];
  }

  [Symbol.iterator](): MapIterator<[string, readonly LiveFirmware[]]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'FirmwareIndex';
  }
}
