// The live index of one tenant's firmware records: version_number → the records with that
// number (LiveTenant.firmwares). Nearly every number has one record; a map of one-element lists
// kept a list for each (an array and its elements, 56 bytes: 11 MB at 200,000 records, held by
// watch between passes). Here a number with one record holds the record itself, and the list a
// reader asks for is made then. Readers see a ReadonlyMap of lists, as before.
import type { LiveFirmware } from './model/index.js';

type Held = LiveFirmware | readonly LiveFirmware[];

const listOf = (held: Held): readonly LiveFirmware[] => (Array.isArray(held) ? held as readonly LiveFirmware[] : [held as LiveFirmware]);

const rawGet = Map.prototype.get as (this: Map<string, Held>, k: string) => Held | undefined;
const rawSet = Map.prototype.set as (this: Map<string, Held>, k: string, v: Held) => Map<string, Held>;
const rawEntries = Map.prototype.entries as (this: Map<string, Held>) => MapIterator<[string, Held]>;
const rawValues = Map.prototype.values as (this: Map<string, Held>) => MapIterator<Held>;

/**
 * A Map (code that walks Maps, such as redaction, takes it as one) whose own storage holds a
 * record or a list per number; every read gives lists.
 */
export class FirmwareIndex extends Map<string, readonly LiveFirmware[]> {
  /** A copy to change (the refresh of some records on top of a full read): the records are shared. */
  static copyOf(index: ReadonlyMap<string, readonly LiveFirmware[]>): FirmwareIndex {
    const out = new FirmwareIndex();
    if (index instanceof FirmwareIndex) for (const [k, v] of rawEntries.call(index as unknown as Map<string, Held>)) rawSet.call(out as unknown as Map<string, Held>, k, v);
    else for (const [k, v] of index) out.set(k, v);
    return out;
  }

  override set(version: string, list: readonly LiveFirmware[]): this {
    rawSet.call(this as unknown as Map<string, Held>, version, list.length === 1 ? list[0]! : list);
    return this;
  }

  override get(version: string): readonly LiveFirmware[] | undefined {
    const held = rawGet.call(this as unknown as Map<string, Held>, version);
    return held === undefined ? undefined : listOf(held);
  }

  override forEach(fn: (list: readonly LiveFirmware[], version: string, map: Map<string, readonly LiveFirmware[]>) => void, thisArg?: unknown): void {
    for (const [k, v] of rawEntries.call(this as unknown as Map<string, Held>)) fn.call(thisArg, listOf(v), k, this);
  }

  override *values(): MapIterator<readonly LiveFirmware[]> {
    for (const v of rawValues.call(this as unknown as Map<string, Held>)) yield listOf(v);
  }

  override *entries(): MapIterator<[string, readonly LiveFirmware[]]> {
    for (const [k, v] of rawEntries.call(this as unknown as Map<string, Held>)) yield [k, listOf(v)];
  }

  override [Symbol.iterator](): MapIterator<[string, readonly LiveFirmware[]]> {
    return this.entries();
  }
}
