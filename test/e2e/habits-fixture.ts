// A small tenant for the end-to-end tests of Terraform habits, JSON output and shell completion:
// two firmware updates and two phase appends against the emulator.
import type { Seed } from '../../src/emulator/index.js';
import { writeTree } from './helpers.js';

export const KEY = 'habits-secret-key-acme-0123456789';

export function seed(): Seed {
  return {
    tenants: {
      acme: {
        api_key: KEY,
        bundles: [
          { version: '2024.06', firmwares: [
            { version_number: '2.4.0', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
            { version_number: '2.4.1', component_name: 'modem', uncompressed_size: 1000, is_deactivated: false, dependencies: [] },
          ] },
        ],
        actions: [{ id: 42, status: 'pending', phases: [{ name: 'canary', trigger_on: {}, info: { percent: 1 } }] }],
      },
    },
  } as unknown as Seed;
}

export function config(extra = ''): string {
  return `apiVersion: dus-sync/v1
kind: Config
default_tenant: acme
tenants:
  acme: { api_key_env: DUS_API_KEY_ACME }
${extra}`;
}

export const DESIRED = `apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "2.4.0", is_deactivated: true }
---
apiVersion: dus-sync/v1
kind: Firmware
metadata: { tenant: acme }
spec: { version_number: "2.4.1", uncompressed_size: 2048 }
---
apiVersion: dus-sync/v1
kind: Action
metadata: { tenant: acme }
spec:
  id: 42
  phases:
    - { name: canary, trigger_on: {}, info: { percent: 1 } }
    - { name: wave-1, trigger_on: { after_minutes: 60 }, info: { percent: 10 } }
    - { name: all, trigger_on: { after_minutes: 1440 }, info: { percent: 100 } }
`;

/** A repository: dus-sync.yaml (with `extra` appended) and the desired state above. */
export function repo(extra = ''): string {
  return writeTree({ 'dus-sync.yaml': config(extra), 'tenants/acme.yaml': DESIRED });
}

export function env(url: string, key = KEY): Record<string, string> {
  return { DUS_BASE_URL: url, DUS_API_KEY_ACME: key };
}
