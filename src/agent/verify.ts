// Pure check used after applying a saved plan (which has no desired state to re-plan from):
// each change must now be visible in the live state.
import type { Change, LiveState } from '../model/index.js';
import { deepEqual, sortDependencies } from '../core/canonical.js';

export function unconvergedChanges(changes: readonly Change[], live: LiveState): string[] {
  const out: string[] = [];
  for (const c of changes) {
    const tenant = live.tenants.get(c.tenant);
    switch (c.kind) {
      case 'firmware': {
        const records = tenant?.firmwares.get(c.key) ?? [];
        const record = records.find((r) => r.component_name === c.component_name);
        const ok = record !== undefined
          && record.is_deactivated === c.body.is_deactivated
          && record.uncompressed_size === c.body.uncompressed_size
          && deepEqual(sortDependencies(record.dependencies), sortDependencies(c.body.dependencies));
        if (!ok) out.push(`firmware ${c.key} in ${c.tenant} does not have the planned values`);
        break;
      }
      case 'phase': {
        const action = tenant?.actions.get(c.action_id);
        const phase = action?.phases[c.index];
        const ok = phase !== undefined && phase.name === c.after.name
          && deepEqual(phase.trigger_on ?? {}, c.after.trigger_on) && deepEqual(phase.info ?? {}, c.after.info);
        if (!ok) out.push(`phase ${c.index} "${c.after.name}" of action ${c.key} in ${c.tenant} is not there`);
        break;
      }
      default: {
        const never: never = c;
        throw new Error(`unknown change ${JSON.stringify(never)}`);
      }
    }
  }
  return out;
}
