// Pure helpers of the executor: which changes form a chain and in what order.
import type { Change, PhaseChange } from '../model/index.js';

/** A unit of work: changes that must run one after the other (the phases of one action), or a lone firmware update. */
export interface Chain {
  readonly id: string;
  readonly changes: readonly Change[];
}

/**
 * One chain per action (phases by index) and one per firmware change, in plan order of their
 * first change, so that the work starts in the order the plan shows it.
 */
export function chainsOf(changes: readonly Change[]): Chain[] {
  const byId = new Map<string, Change[]>();
  for (const c of changes) {
    const id = chainId(c);
    const list = byId.get(id);
    if (list === undefined) byId.set(id, [c]);
    else list.push(c);
  }
  return [...byId].map(([id, list]) => ({
    id,
    changes: list.every(isPhase) ? [...list].sort((a, b) => a.index - b.index) : list,
  }));
}

export function chainId(c: Change): string {
  switch (c.kind) {
    case 'firmware': return `${c.tenant}\0firmware\0${c.key}\0${c.component_name}`;
    case 'phase': return `${c.tenant}\0action\0${c.action_id}`;
    default: return assertNever(c);
  }
}

function isPhase(c: Change): c is PhaseChange {
  return c.kind === 'phase';
}

export function describe(c: Change): string {
  switch (c.kind) {
    case 'firmware': return `firmware ${c.key} in ${c.tenant}`;
    case 'phase': return `phase ${c.index} "${c.after.name}" of action ${c.action_id} in ${c.tenant}`;
    default: return assertNever(c);
  }
}

export function assertNever(x: never): never {
  throw new Error(`unexpected value ${JSON.stringify(x)}`);
}
