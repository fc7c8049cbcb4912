// Small builders of desired and live states, so that each plan() test says only what matters to it.
import type {
  Action,
  Dependency,
  DesiredAction,
  DesiredFirmware,
  DesiredObject,
  DesiredState,
  FirmwareSpec,
  LiveFirmware,
  LiveState,
  LiveTenant,
  Phase,
  PhaseSpec,
} from '../../src/model/index.js';

export const TENANT = 'acme';

interface DocOptions {
  readonly tenant?: string;
  readonly file?: string;
  readonly line?: number;
}

function source(opts: DocOptions, fallback: string) {
  return { file: opts.file ?? `tenants/${opts.tenant ?? TENANT}/${fallback}.yaml`, line: opts.line ?? 1, column: 1 };
}

export function dep(component_name: string, min_version: string): Dependency {
  return { component_name, min_version };
}

export function phase(name: string, trigger_on: Record<string, unknown> = {}, info: Record<string, unknown> = {}): PhaseSpec {
  return { name, trigger_on, info };
}

export function firmware(spec: FirmwareSpec, opts: DocOptions = {}): DesiredFirmware {
  return {
    kind: 'firmware',
    tenant: opts.tenant ?? TENANT,
    labels: {},
    source: source(opts, 'firmware'),
    spec,
  };
}

export function action(id: number, phases: readonly (string | PhaseSpec)[], opts: DocOptions = {}): DesiredAction {
  return {
    kind: 'action',
    tenant: opts.tenant ?? TENANT,
    labels: {},
    source: source(opts, 'actions'),
    id,
    phases: phases.map((p) => (typeof p === 'string' ? phase(p) : p)),
  };
}

export function desired(...objects: DesiredObject[]): DesiredState {
  return {
    firmwares: objects.filter((o): o is DesiredFirmware => o.kind === 'firmware'),
    actions: objects.filter((o): o is DesiredAction => o.kind === 'action'),
    files: [],
  };
}

export function liveFirmware(fields: Partial<LiveFirmware> & { version_number: string }): LiveFirmware {
  return {
    component_name: 'modem',
    firmware_id: null,
    is_deactivated: false,
    uncompressed_size: 1000,
    dependencies: [],
    bundles: ['2024.06'],
    ...fields,
  };
}

export function liveAction(id: number, phases: readonly (string | Phase)[], extra: Partial<Action> = {}): Action {
  return { id, status: 'pending', phases: phases.map((p) => (typeof p === 'string' ? { name: p, trigger_on: {}, info: {} } : p)), ...extra };
}

export interface LiveTenantInput {
  readonly firmwares?: readonly LiveFirmware[];
  /** Actions that exist; a number alone stands for an action the API answered 404 for. */
  readonly actions?: readonly (Action | number)[];
}

export function live(tenants: Record<string, LiveTenantInput> = {}): LiveState {
  const out = new Map<string, LiveTenant>();
  for (const [name, input] of Object.entries(tenants)) {
    const firmwares = new Map<string, LiveFirmware[]>();
    for (const fw of input.firmwares ?? []) firmwares.set(fw.version_number, [...(firmwares.get(fw.version_number) ?? []), fw]);
    const actions = new Map<number, Action | null>();
    for (const a of input.actions ?? []) {
      if (typeof a === 'number') actions.set(a, null);
      else actions.set(a.id, a);
    }
    out.set(name, { firmwares, actions });
  }
  return { tenants: out };
}
