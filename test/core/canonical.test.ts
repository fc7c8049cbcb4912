import { describe, expect, it } from 'vitest';
import { canonicalJson, deepEqual, liveObjectState, phaseDigestInput } from '../../src/core/canonical.js';
import { dep, live, liveAction, liveFirmware } from './builders.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}');
  });

  it('drops undefined members the way JSON does and keeps array order', () => {
    expect(canonicalJson({ a: undefined, b: [3, undefined, 1] })).toBe('{"b":[3,null,1]}');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('orders keys by code unit, not by locale', () => {
    expect(canonicalJson({ b: 1, B: 2, ä: 3, a: 4 })).toBe('{"B":2,"a":4,"b":1,"ä":3}');
  });
});

describe('deepEqual', () => {
  it('ignores key order but not array order or types', () => {
    expect(deepEqual({ a: 1, b: { c: 2 } }, { b: { c: 2 }, a: 1 })).toBe(true);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(deepEqual({}, null)).toBe(false);
  });
});

describe('phaseDigestInput', () => {
  it('is the canonical phase, whatever the key order', () => {
    expect(phaseDigestInput({ name: 'w', trigger_on: { b: 1, a: 2 }, info: {} })).toBe('{"info":{},"name":"w","trigger_on":{"a":2,"b":1}}');
  });
});

describe('liveObjectState', () => {
  const state = live({
    acme: {
      firmwares: [
        liveFirmware({ version_number: '2.4.1', component_name: 'wifi', dependencies: [dep('b', '2'), dep('a', '1')], bundles: ['y', 'x'] }),
        liveFirmware({ version_number: '2.4.1', component_name: 'modem' }),
      ],
      actions: [liveAction(42, [{ name: 'canary', trigger_on: null, info: { p: 1 } }]), 43],
    },
  });

  it('holds every record of a firmware version, sorted, with its managed fields and bundles', () => {
    expect(liveObjectState(state, 'acme', 'firmware', '2.4.1')).toBe(
      '[{"bundles":["2024.06"],"component_name":"modem","dependencies":[],"is_deactivated":false,"uncompressed_size":1000},' +
        '{"bundles":["x","y"],"component_name":"wifi","dependencies":[{"component_name":"a","min_version":"1"},{"component_name":"b","min_version":"2"}],"is_deactivated":false,"uncompressed_size":1000}]',
    );
  });

  it('holds the phases of an action, null trigger_on read as {}', () => {
    expect(liveObjectState(state, 'acme', 'action', '42')).toBe('{"phases":[{"info":{"p":1},"name":"canary","trigger_on":{}}]}');
  });

  it('is null for what is absent', () => {
    expect(liveObjectState(state, 'acme', 'firmware', '9.9.9')).toBeNull();
    expect(liveObjectState(state, 'acme', 'action', '43')).toBeNull();
    expect(liveObjectState(state, 'acme', 'action', '44')).toBeNull();
    expect(liveObjectState(state, 'globex', 'firmware', '2.4.1')).toBeNull();
  });

  it('changes when a managed field changes', () => {
    const moved = live({ acme: { firmwares: [liveFirmware({ version_number: '2.4.1', is_deactivated: true })] } });
    const still = live({ acme: { firmwares: [liveFirmware({ version_number: '2.4.1' })] } });
    expect(liveObjectState(moved, 'acme', 'firmware', '2.4.1')).not.toBe(liveObjectState(still, 'acme', 'firmware', '2.4.1'));
  });
});
