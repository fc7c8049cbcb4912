// One rich plan that exercises every renderer branch: scalar and dependency edits, an unknown
// live value, appends after triggered phases, a conflict, errors, several tenants, and names
// with characters that markdown, HTML and terminals treat specially.
import type { ApplyReport, DesiredState, LiveState } from '../../src/model/index.js';
import { plan } from '../../src/core/plan.js';
import { action, dep, desired, firmware, live, liveAction, liveFirmware, phase } from './builders.js';

export const richDesired: DesiredState = desired(
  firmware(
    {
      version_number: '2.4.1',
      component_name: 'modem',
      is_deactivated: true,
      uncompressed_size: 1048576,
      dependencies: [dep('dsp', '1.1.0'), dep('bootloader', '1.2.0')],
    },
    { file: 'tenants/acme/modem.yaml', line: 1 },
  ),
  firmware({ version_number: '3.0.0', uncompressed_size: 2048 }, { file: 'tenants/acme/modem.yaml', line: 12 }),
  firmware({ version_number: '1.0.0', is_deactivated: false }, { file: 'tenants/acme/modem.yaml', line: 20 }),
  firmware({ version_number: '9.9.9', is_deactivated: true }, { file: 'tenants/acme/old.yaml', line: 3 }),
  firmware({ version_number: '5.0.0', is_deactivated: true }, { file: 'tenants/acme/wifi.yaml', line: 1 }),
  {
    ...action(
      42,
      [
        phase('canary', { after_minutes: 60 }, { percent: 1 }),
        phase('wave-1', { min_success_rate: 0.98 }, { percent: 10 }),
        phase('wave-2', { min_success_rate: 0.98 }, { percent: 50 }),
        phase('wave|3 <all> @team', { min_success_rate: 0.99 }, { percent: 100, note: 'ship `it`' }),
      ],
      { file: 'tenants/acme/actions.yaml', line: 1 },
    ),
    // Each phase's own line: appends and conflicts point there, not at the document.
    phaseSources: [8, 11, 14, 17].map((line) => ({ file: 'tenants/acme/actions.yaml', line, column: 7 })),
  },
  {
    ...action(43, [phase('canary'), phase('wave-1', { min_success_rate: 0.9 })], { file: 'tenants/acme/actions.yaml', line: 30 }),
    phaseSources: [37, 38].map((line) => ({ file: 'tenants/acme/actions.yaml', line, column: 7 })),
  },
  action(44, [phase('canary')], { file: 'tenants/acme/actions.yaml', line: 40 }),
  firmware({ version_number: '7.1.0', is_deactivated: true }, { tenant: 'globex', file: 'tenants/globex/fw.yaml', line: 1 }),
  action(5, [phase('pilot'), phase('everyone', {}, { percent: 100 })], { tenant: 'globex', file: 'tenants/globex/a.yaml', line: 1 }),
  firmware({ version_number: '0.1.0', is_deactivated: false }, { tenant: 'initech', file: 'tenants/initech/fw.yaml', line: 1 }),
);

export const richLive: LiveState = live({
  acme: {
    firmwares: [
      liveFirmware({
        version_number: '2.4.1',
        uncompressed_size: 1000,
        dependencies: [dep('radio', '0.9.0'), dep('dsp', '1.0.0')],
      }),
      liveFirmware({ version_number: '3.0.0', component_name: 'dsp', uncompressed_size: null }),
      liveFirmware({ version_number: '1.0.0' }),
      liveFirmware({ version_number: '5.0.0', component_name: 'wifi' }),
      liveFirmware({ version_number: '5.0.0', component_name: 'modem' }),
    ],
    actions: [
      liveAction(
        42,
        [
          { name: 'canary', trigger_on: { after_minutes: 60 }, info: { percent: 1 } },
          { name: 'wave-1', trigger_on: { min_success_rate: 0.98 }, info: { percent: 10 } },
        ],
        { phases_triggered: [true, false], next_phase_index: 1 },
      ),
      liveAction(43, ['canary', { name: 'wave-1', trigger_on: { min_success_rate: 0.98 }, info: {} }]),
      liveAction(44, ['canary']),
    ],
  },
  globex: {
    firmwares: [liveFirmware({ version_number: '7.1.0', component_name: 'radio', is_deactivated: null })],
    actions: [liveAction(5, ['pilot'], { phases_triggered: [true] })],
  },
  initech: { firmwares: [liveFirmware({ version_number: '0.1.0' })] },
});

export const richPlan = plan(richDesired, richLive);

export const richReport: ApplyReport = {
  results: [...richPlan.changes].reverse().map((change, i) => {
    if (change.kind === 'phase' && change.index === 3) {
      return { change, status: 'failed' as const, message: 'the API answered 400: {"name":["too long"]}', durationMs: 40 };
    }
    if (change.kind === 'phase' && change.index === 2 && change.tenant === 'acme') {
      return { change, status: 'skipped' as const, message: 'an earlier phase of action 42 failed', durationMs: 0 };
    }
    return { change, status: 'applied' as const, durationMs: 10 + i };
  }),
  applied: richPlan.changes.length - 2,
  failed: 1,
  skipped: 1,
  unconverged: ['acme action 42: 2 phases still to append'],
  diverged: [],
};
