// What dus-sync appended recently, and a read showed: kept for a day beside the journal. An
// action's phases are append-only, so a phase dus-sync saw stored cannot leave; if a later read
// does not show it, the API's reads went backwards (a replica lagging behind a load balancer),
// and planning from that read would append the phase again. The executor refuses such an append.
// Best effort: the journal guards appends in doubt; this guards appends already settled.
import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { redact } from '../redact.js';
import { appendAll, openPrivateFile, readWhole, replacePrivateFile } from './private-dir.js';
import { tenantFold } from '../tenant.js';

/** The history of appends seen stored, beside the journal. */
export const HISTORY_FILE = 'appended.jsonl';

/** How long an appended phase is remembered. */
export const HISTORY_RETAIN_MS = 24 * 3_600_000;
const MAX_HISTORY_BYTES = 64 * 1024 * 1024;
const OPEN_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;

export interface Appended {
  readonly tenant: string;
  readonly action_id: number;
  readonly index: number;
  readonly digest: string;
  readonly name: string;
  /** When a read showed it stored. */
  readonly at: string;
  /** The API (base URL) it was appended through: another service's history says nothing here. */
  readonly api?: string;
}

// The tenant folded: a server may take ACME and acme for one tenant (src/tenant.ts).
const keyOf = (a: Pick<Appended, 'tenant' | 'action_id' | 'index' | 'digest' | 'api'>): string => `${a.api ?? ''}\0${tenantFold(a.tenant)}\0${a.action_id}\0${a.index}\0${a.digest}`;

export class AppendHistory {
  private constructor(readonly path: string, private handle: FileHandle, private readonly entries: Map<string, Appended>, private readonly api: string | undefined) {}

  /** The history beside a journal file. */
  static async openBeside(journalPath: string, api?: string): Promise<AppendHistory> {
    const path = join(dirname(journalPath), HISTORY_FILE);
    const handle = await openPrivateFile(path, OPEN_FLAGS, 'the history of appends');
    try {
      const text = await readWhole(handle, MAX_HISTORY_BYTES, `the history of appends ${path}`);
      if (text.length > 0 && !text.endsWith('\n')) await appendAll(handle, '\n');
      const entries = new Map<string, Appended>();
      const since = Date.now() - HISTORY_RETAIN_MS;
      for (const raw of text.split('\n')) {
        const a = parse(raw);
        if (a && Date.parse(a.at) >= since) entries.set(keyOf(a), a);
      }
      return new AppendHistory(path, handle, entries, api);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** When dus-sync saw this very phase stored at this index, if within the last day. */
  find(tenant: string, actionId: number, index: number, digest: string): Appended | undefined {
    return this.entries.get(keyOf({ tenant, action_id: actionId, index, digest, ...(this.api !== undefined ? { api: this.api } : {}) }));
  }

  async add(a: Omit<Appended, 'at'>): Promise<void> {
    // The name is for people (entries are matched by digest): never a key in the state folder.
    const entry: Appended = { ...a, name: redact(a.name), at: new Date().toISOString(), ...(this.api !== undefined ? { api: this.api } : {}) };
    this.entries.set(keyOf(entry), entry);
    await appendAll(this.handle, JSON.stringify(entry) + '\n');
  }

  /** Keeps the last day only, through an exclusive temp file renamed over it. */
  async compact(): Promise<void> {
    const since = Date.now() - HISTORY_RETAIN_MS;
    const keep = [...this.entries.values()].filter((a) => Date.parse(a.at) >= since);
    await replacePrivateFile(this.path, keep.map((a) => JSON.stringify(a) + '\n').join(''), 'the history of appends');
    await this.handle.close();
    this.handle = await openPrivateFile(this.path, OPEN_FLAGS, 'the history of appends');
  }

  async close(): Promise<void> {
    await this.handle.sync().catch(() => undefined);
    await this.handle.close();
  }
}

function parse(raw: string): Appended | undefined {
  if (raw.trim() === '') return undefined;
  try {
    const v = JSON.parse(raw) as Partial<Appended> | null;
    if (v && typeof v.tenant === 'string' && typeof v.action_id === 'number' && typeof v.index === 'number'
      && typeof v.digest === 'string' && typeof v.at === 'string') {
      return {
        tenant: v.tenant, action_id: v.action_id, index: v.index, digest: v.digest, name: typeof v.name === 'string' ? v.name : '', at: v.at,
        ...(typeof v.api === 'string' ? { api: v.api } : {}),
      };
    }
  } catch { /* a torn line */ }
  return undefined;
}
