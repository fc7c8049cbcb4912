// The end-to-end tests spawn the built CLI as a user runs it (`npm test` builds dist/ first).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');

export interface PrivateBuild {
  readonly cli: string;
  cleanup(): void;
}

export async function buildCli(): Promise<PrivateBuild> {
  const cli = join(REPO, 'dist', 'cli.js');
  if (!existsSync(cli)) throw new Error('dist/cli.js is missing: run npm run build (npm test does it first)');
  return { cli, cleanup: () => {} };
}
