// Small builders of desired states for the diff tests.
import type { DesiredAction, DesiredFirmware, DesiredState, FirmwareSpec, PhaseSpec } from '../../src/model/index.js';

export function fw(version: string, spec: Omit<FirmwareSpec, 'version_number'> = {}, tenant = 'acme', labels: Record<string, string> = {}): DesiredFirmware {
  return { kind: 'firmware', tenant, labels, source: { file: `tenants/${tenant}/fw.yaml`, line: 1, column: 1 }, spec: { version_number: version, ...spec } };
}

export function phase(name: string, trigger_on: Record<string, unknown> = {}, info: Record<string, unknown> = {}): PhaseSpec {
  return { name, trigger_on, info };
}

export function action(id: number, phases: PhaseSpec[], tenant = 'acme'): DesiredAction {
  return { kind: 'action', tenant, labels: {}, source: { file: `tenants/${tenant}/actions.yaml`, line: 1, column: 1 }, id, phases };
}

export function state(...objects: (DesiredFirmware | DesiredAction)[]): DesiredState {
  return {
    firmwares: objects.filter((o): o is DesiredFirmware => o.kind === 'firmware'),
    actions: objects.filter((o): o is DesiredAction => o.kind === 'action'),
    files: [],
  };
}
