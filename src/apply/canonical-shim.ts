// Temporary stand-in for src/core/canonical.ts (being written in parallel): only the
// signatures apply/ needs. Deleted once the real module lands.
import type { Action, LiveFirmware } from '../model/index.js';

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function phaseDigestInput(phase: { name: string; trigger_on?: unknown; info?: unknown }): string {
  return canonicalJson({ name: phase.name, trigger_on: phase.trigger_on ?? {}, info: phase.info ?? {} });
}

export function liveObjectState(
  obj: { kind: 'firmware'; records: readonly LiveFirmware[] | undefined } | { kind: 'action'; action: Action | null | undefined },
): string {
  return obj.kind === 'firmware' ? canonicalJson(obj.records ?? null) : canonicalJson(obj.action ?? null);
}
