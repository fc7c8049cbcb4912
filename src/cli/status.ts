// `dus-sync status`: live rollout status of the declared actions (reads only).
import { windowHold } from '../core/windows.js';
import type { SyncWindow } from '../model/index.js';
import { formatDuration } from '../limits.js';
import { connect, loadOrThrow } from '../agent/reconcile.js';
import { renderStatusJson, renderStatusText, type ActionStatus } from '../core/render/status.js';
import { UserError } from '../errors.js';
import { redactDeep } from '../redact.js';
import { apiLimitFlags, useColor, type GlobalOptions } from './context.js';
import { setup } from './common.js';
import { keysIn, SHOWN, warnKeysInLive } from '../live-keys.js';

function heldBy(windows: readonly SyncWindow[], tenant: string, now: number): { heldBy?: string } {
  const hold = windows.length > 0 ? windowHold(windows, tenant, 'action', now) : undefined;
  return hold ? { heldBy: `appends ${hold.message}` } : {};
}

export async function run(rawOpts: Record<string, unknown>, globals: GlobalOptions): Promise<number> {
  const format = (rawOpts.format as string | undefined) ?? 'text';
  const { config, filter, log } = await setup(globals);
  const desired = await loadOrThrow(config, filter);
  const actions = [...desired.actions].sort((a, b) => (a.tenant === b.tenant ? a.id - b.id : a.tenant < b.tenant ? -1 : 1));
  const tenants = [...new Set(actions.map((a) => a.tenant))];
  if (actions.length === 0) {
    // "No actions" with exit 0 reads as "all rollouts fine" to a script; there is nothing to show.
    const scope = filter.tenants && filter.tenants.length > 0 ? ` for tenant ${filter.tenants.join(' or ')}` : '';
    throw new UserError(`no actions are declared${scope}${filter.selector ? ' with these labels' : ''}, so there is no rollout to show; `
      + 'status reads the actions that Action documents declare (dus-sync export --tenant NAME --action ID --out DIR writes one from the live state)');
  }
  const client = await connect(config, tenants, { env: process.env, log, insecureHttp: globals.insecureHttp, caFile: globals.caFile, limits: apiLimitFlags(globals) });
  const now = Date.now();
  try {
    const statuses: ActionStatus[] = await Promise.all(actions.map(async (a) => ({
      tenant: a.tenant, id: a.id, declaredPhases: a.phases.length, live: await client.tenant(a.tenant).getAction(a.id),
      ...(a.paused ? { paused: true } : {}),
      ...(a.pacing ? { pacing: a.pacing } : {}),
      ...(a.minSoakMs !== undefined ? { minSoak: formatDuration(a.minSoakMs) } : {}),
      ...heldBy(config.windows ?? [], a.tenant, now),
    })));
    warnKeysInLive(log, statuses.flatMap((s) => (s.live ? keysIn(s.tenant, `action ${s.id}`, s.live) : [])), SHOWN);
    const shown = redactDeep(statuses);
    process.stdout.write(format === 'json' ? renderStatusJson(shown) : renderStatusText(shown, { color: useColor(globals) }));
    return statuses.some((s) => s.live === null) ? 1 : 0;
  } finally {
    await client.close();
  }
}
