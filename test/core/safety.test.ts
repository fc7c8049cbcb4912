import { describe, expect, it } from 'vitest';
import { plan } from '../../src/core/plan.js';
import { checkSafety } from '../../src/core/safety.js';
import { desired, firmware, live, liveFirmware } from './builders.js';

const versions = ['1.0.0', '1.0.1', '1.0.2', '1.0.3'];
// Three deactivations and one size change: four changes.
const p = plan(
  desired(
    ...versions.slice(0, 3).map((v) => firmware({ version_number: v, is_deactivated: true })),
    firmware({ version_number: '1.0.3', uncompressed_size: 5 }),
  ),
  live({ acme: { firmwares: versions.map((v) => liveFirmware({ version_number: v })) } }),
);

describe('checkSafety', () => {
  it('is empty without limits and within them', () => {
    expect(p.changes).toHaveLength(4);
    expect(checkSafety(p, {})).toEqual([]);
    expect(checkSafety(p, { maxChanges: 4, maxDeactivations: 3 })).toEqual([]);
  });

  it('names the change limit that is exceeded', () => {
    expect(checkSafety(p, { maxChanges: 3 })).toEqual([
      'the plan has 4 changes, more than safety.max_changes (3); review it and pass --allow-large',
    ]);
  });

  it('counts only deactivations against max_deactivations', () => {
    expect(checkSafety(p, { maxDeactivations: 2 })).toEqual([
      'the plan deactivates 3 firmware records, more than safety.max_deactivations (2); review it and pass --allow-large',
    ]);
  });

  it('names a limit by where it was set: a flag, or the config setting and its place', () => {
    expect(checkSafety(p, { maxChanges: 3, maxDeactivations: 2 }, { maxChanges: { name: '--max-changes' }, maxDeactivations: { name: 'safety.max_deactivations', at: 'dus-sync.yaml:7' } })).toEqual([
      'the plan has 4 changes, more than --max-changes (3); review it and pass --allow-large',
      'the plan deactivates 3 firmware records, more than safety.max_deactivations (2, set at dus-sync.yaml:7); review it and pass --allow-large',
    ]);
  });

  it('reports both limits, and a limit of 0 refuses any', () => {
    expect(checkSafety(p, { maxChanges: 0, maxDeactivations: 0 })).toHaveLength(2);
  });

  it('does not count a reactivation as a deactivation', () => {
    const reactivate = plan(
      desired(firmware({ version_number: '1.0.0', is_deactivated: false })),
      live({ acme: { firmwares: [liveFirmware({ version_number: '1.0.0', is_deactivated: true })] } }),
    );
    expect(checkSafety(reactivate, { maxDeactivations: 0 })).toEqual([]);
    expect(checkSafety(reactivate, { maxChanges: 0 })).toEqual([
      'the plan has 1 change, more than safety.max_changes (0); review it and pass --allow-large',
    ]);
  });
});
