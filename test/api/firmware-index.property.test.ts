import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FirmwareIndex } from '../../src/live-firmwares.js';
import type { LiveFirmware } from '../../src/model/index.js';

const record = (version: string, component: string): LiveFirmware => ({
  version_number: version, component_name: component, firmware_id: `${version}/${component}`, is_deactivated: false, uncompressed_size: 1, dependencies: [], bundles: ['b'],
});

const ops = fc.array(fc.tuple(fc.constantFrom('1', '2', '3', '4'), fc.array(fc.constantFrom('x', 'y', 'z'), { maxLength: 3 })), { maxLength: 30 });

describe('FirmwareIndex', () => {
  it('reads as the Map of lists it stands for, whatever is set, copied and set again', () => {
    fc.assert(fc.property(ops, ops, (first, second) => {
      const index = new FirmwareIndex();
      const map = new Map<string, readonly LiveFirmware[]>();
      for (const [v, cs] of first) { const list = cs.map((c) => record(v, c)); index.set(v, list); map.set(v, list); }
      const copy = FirmwareIndex.copyOf(index);
      const copied = new Map(map);
      for (const [v, cs] of second) { const list = cs.map((c) => record(v, c)); copy.set(v, list); copied.set(v, list); }
      for (const [i, m] of [[index, map], [copy, copied]] as const) {
        expect(i.size).toBe(m.size);
        expect([...i]).toEqual([...m]);
        expect([...i.keys()]).toEqual([...m.keys()]);
        expect([...i.values()]).toEqual([...m.values()]);
        for (const v of ['1', '2', '3', '4', '5']) {
          expect(i.has(v)).toBe(m.has(v));
          expect(i.get(v)).toEqual(m.get(v));
          // The records themselves are the ones set, not copies.
          i.get(v)?.forEach((r, n) => expect(r).toBe(m.get(v)![n]));
        }
        const seen: [string, readonly LiveFirmware[]][] = [];
        i.forEach((list, v, self) => { expect(self).toBe(i); seen.push([v, list]); });
        expect(seen).toEqual([...m]);
      }
    }));
  });

  it('copies a plain Map of lists, and is not changed by changes to its copy', () => {
    const a = record('1', 'x');
    const plain = new Map<string, readonly LiveFirmware[]>([['1', [a]]]);
    const copy = FirmwareIndex.copyOf(plain);
    copy.set('2', [record('2', 'x'), record('2', 'y')]);
    expect(plain.size).toBe(1);
    expect(copy.get('1')).toEqual([a]);
    const again = FirmwareIndex.copyOf(copy);
    again.set('1', []);
    expect(copy.get('1')).toEqual([a]);
    expect(again.get('1')).toEqual([]);
    expect(copy).toBeInstanceOf(Map);
    expect(new Map(copy)).toEqual(new Map([['1', [a]], ['2', copy.get('2')]]));
  });
});
