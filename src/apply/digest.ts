import { createHash } from 'node:crypto';
import type { Phase, PhaseSpec } from '../model/index.js';
import { normalizePhase, phaseDigestInput } from '../core/canonical.js';

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The identity of a phase for the journal and read-backs: name, trigger_on and info, canonical. */
export function phaseDigest(phase: PhaseSpec | Phase): string {
  return sha256(phaseDigestInput(normalizePhase(phase)));
}
