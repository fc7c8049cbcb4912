// Shared wording of the desired-state diff renderers (text and markdown say the same things).
import type { Dependency, FirmwareSpec, PhaseSpec } from '../../model/index.js';
import type { DependencyDiff, DesiredDiffSummary, FieldDiff } from '../desired-diff.js';

/** A value as a reviewer reads it: strings quoted (versions!), absent as "(unmanaged)". */
export function showValue(value: FieldDiff['before'], field?: FieldDiff['field']): string {
  if (value === null) return field === 'component_name' || field === 'bundle_version' ? '(no guard)' : '(unmanaged)';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return compactJson(value);
  return String(value);
}

/** JSON with sorted keys on one line: `{"after_minutes":60}`. */
export function compactJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

export function showDependency(d: DependencyDiff): string {
  switch (d.op) {
    case 'add': return `+ ${d.component_name} >= ${JSON.stringify(d.after)}`;
    case 'remove': return `- ${d.component_name} >= ${JSON.stringify(d.before)}`;
    case 'change': return `~ ${d.component_name} min_version ${JSON.stringify(d.before)} → ${JSON.stringify(d.after)}`;
  }
}

export function showDependencyList(deps: readonly Dependency[] | null): string {
  if (deps === null) return '(unmanaged)';
  if (deps.length === 0) return '[]';
  return [...deps].sort((a, b) => (a.component_name < b.component_name ? -1 : 1))
    .map((d) => `${d.component_name} >= ${JSON.stringify(d.min_version)}`).join(', ');
}

export function showPhase(p: PhaseSpec): string {
  return `"${p.name}" trigger_on ${compactJson(p.trigger_on)} info ${compactJson(p.info)}`;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** One sentence: "2 firmwares changed, 1 added; 1 phase appended; 1 warning." */
export function summaryLine(s: DesiredDiffSummary): string {
  const fw = [
    s.firmwares_changed ? `${s.firmwares_changed} changed` : '',
    s.firmwares_added ? `${s.firmwares_added} added` : '',
    s.firmwares_removed ? `${s.firmwares_removed} removed` : '',
  ].filter(Boolean);
  const ac = [
    s.actions_changed ? `${s.actions_changed} changed` : '',
    s.actions_added ? `${s.actions_added} added` : '',
    s.actions_removed ? `${s.actions_removed} removed` : '',
  ].filter(Boolean);
  const parts: string[] = [];
  const fwTotal = s.firmwares_added + s.firmwares_removed + s.firmwares_changed;
  const acTotal = s.actions_added + s.actions_removed + s.actions_changed;
  if (fwTotal) parts.push(`${fwTotal === 1 ? 'firmware' : 'firmwares'}: ${fw.join(', ')}`);
  if (acTotal) parts.push(`${acTotal === 1 ? 'action' : 'actions'}: ${ac.join(', ')}`);
  if (s.phases_appended) parts.push(`${plural(s.phases_appended, 'phase')} appended`);
  if (s.deactivations) parts.push(`${plural(s.deactivations, 'deactivation')}`);
  if (s.warnings) parts.push(plural(s.warnings, 'warning'));
  return parts.length === 0 ? 'No differences in the desired state.' : `${parts.join('; ')}.`;
}

/** What an added firmware document manages: "is_deactivated: true, dependencies: a >= "1"". */
export function showManaged(spec: Readonly<FirmwareSpec>): string {
  const parts: string[] = [];
  if (spec.is_deactivated !== undefined) parts.push(`is_deactivated: ${spec.is_deactivated}`);
  if (spec.uncompressed_size !== undefined) parts.push(`uncompressed_size: ${spec.uncompressed_size}`);
  if (spec.dependencies !== undefined) parts.push(`dependencies: ${showDependencyList(spec.dependencies)}`);
  return parts.length === 0 ? 'no managed fields' : parts.join(', ');
}
