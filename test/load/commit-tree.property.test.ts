// diff --base finds the base commit's files by the working tree's rules (src/load/git.ts
// CommitTree under the walk of src/load/find.ts). Property: for random trees of folders, files
// and symbolic links (relative, absolute, through `..` after a link, chains, loops, dangling, out
// of the repository and back into it, through a link outside it), committed as they are on the disk, the commit's tree resolves every path where
// the kernel does, and the load lists the same files from the commit as from the disk.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { commitTree, type CommitTree } from '../../src/load/git.js';
import { listIn } from '../../src/load/index.js';
import type { ResolvedConfig } from '../../src/model/index.js';

const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'dus-commit-tree-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const NAMES = ['a', 'b', 'c.yaml', 'd.yaml'] as const;
type Node = { kind: 'folder' } | { kind: 'file' } | { kind: 'link'; target: string };

const segment = fc.constantFrom(...NAMES, '..', '.');
const relTarget = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
const target = fc.oneof(
  { weight: 6, arbitrary: relTarget },
  // Absolute into the repository, by its real path, back in from its parent, or through a link
  // of the disk outside it (`..` after a link taken as the kernel takes it, not as text).
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('@REPO@', '@BACK@', '@ALIAS@'), fc.array(segment, { minLength: 0, maxLength: 3 })).map(([from, s]) => [from, ...s].join('/')) },
  { weight: 1, arbitrary: fc.constantFrom('../outside', '../outside/o.yaml', '../../outside', '@BOX@/outside/o.yaml', '/nonexistent-dus/x.yaml') },
);
const node: fc.Arbitrary<Node> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'folder' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'file' as const }) },
  { weight: 3, arbitrary: target.map((t) => ({ kind: 'link' as const, target: t })) },
);
// A tree: path (up to 3 levels of NAMES) to what is there; a folder is made for every prefix.
const treeSpec = fc.dictionary(
  fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
  node,
  { minKeys: 1, maxKeys: 14 },
);

let made = 0;
/**
 * Each repository in a box of its own, beside a folder and a file that links may lead to outside
 * it, and a link of the disk to it: box/r, box/outside/o.yaml, box/alias -> box/r.
 */
function materialize(spec: Record<string, Node>): { repo: string; box: string } {
  const box = join(scratch, `b${made++}`);
  const repo = join(box, 'r');
  const alias = join(box, 'alias');
  mkdirSync(join(box, 'outside'), { recursive: true });
  writeFileSync(join(box, 'outside', 'o.yaml'), 'o: 1\n');
  mkdirSync(repo);
  symlinkSync(repo, alias);
  // Shorter paths first: a file or link at a prefix of another path wins; the longer is dropped.
  const taken = new Map<string, Node['kind']>();
  for (const path of Object.keys(spec).sort((x, y) => x.split('/').length - y.split('/').length || (x < y ? -1 : 1))) {
    const parts = path.split('/');
    if (parts.slice(0, -1).some((_, i) => { const k = taken.get(parts.slice(0, i + 1).join('/')); return k !== undefined && k !== 'folder'; })) continue;
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if (!taken.has(prefix)) { mkdirSync(join(repo, prefix)); taken.set(prefix, 'folder'); }
    }
    if (taken.has(path)) continue;
    const n = spec[path]!;
    taken.set(path, n.kind);
    if (n.kind === 'folder') mkdirSync(join(repo, path));
    else if (n.kind === 'file') writeFileSync(join(repo, path), `x: "${path}"\n`);
    else symlinkSync(n.target.replace('@REPO@', repo).replace('@BACK@', `../${'../'.repeat(path.split('/').length - 1)}${basename(repo)}`).replace('@ALIAS@', alias).replace('@BOX@', box), join(repo, path));
  }
  // An empty folder is not in a commit: each holds a file.
  for (const [path, kind] of taken) if (kind === 'folder') writeFileSync(join(repo, path, 'keep.yaml'), 'k: 1\n');
  writeFileSync(join(repo, 'top.yaml'), 't: 1\n');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd: repo, stdio: 'pipe' });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'tree');
  return { repo, box };
}

/** Whether every link of the repository resolves inside its box (or nowhere): a walk that follows links out then stays in the box. */
function staysInBox(repo: string, box: string, spec: Record<string, Node>): boolean {
  return Object.entries(spec).every(([path, n]) => {
    if (n.kind !== 'link') return true;
    try {
      const real = realpathSync.native(join(repo, path));
      return real === box || real.startsWith(`${box}/`);
    } catch {
      return true;
    }
  });
}

/** What the disk says is at `abs`: its real path and kind, or missing. */
function onDisk(abs: string): { kind: 'folder' | 'file'; real: string } | { kind: 'none' } {
  try {
    const st = statSync(abs);
    return { kind: st.isDirectory() ? 'folder' : 'file', real: realpathSync.native(abs) };
  } catch {
    return { kind: 'none' };
  }
}

function inTree(tree: CommitTree, abs: string): { kind: 'folder' | 'file'; real: string } | { kind: 'none' } {
  const r = tree.resolve(abs);
  if (r.kind === 'folder' || r.kind === 'file') return { kind: r.kind, real: r.real };
  // Out of the repository, the disk may hold something; the commit does not: compared apart.
  if (r.kind === 'outside') return onDisk(r.real);
  return { kind: 'none' };
}

const config = (dir: string): ResolvedConfig => ({ dir, tenants: {}, safety: {}, watchIntervalMs: 300_000, suspend: false } as unknown as ResolvedConfig);

describe("the base commit's tree, against the disk it was committed from", () => {
  it('resolves every path of up to three names as the kernel does, and the load lists the same files', async () => {
    await fc.assert(fc.asyncProperty(treeSpec, async (spec) => {
      const { repo, box } = materialize(spec);
      const tree = await commitTree(repo, 'HEAD');
      const paths = [''];
      for (const a of NAMES) {
        paths.push(a);
        for (const b of NAMES) {
          paths.push(`${a}/${b}`);
          for (const c of NAMES) paths.push(`${a}/${b}/${c}`);
        }
      }
      for (const p of paths) {
        const abs = p === '' ? repo : `${repo}/${p}`;
        expect(inTree(tree, abs), `${p} in ${JSON.stringify(spec)}`).toEqual(onDisk(abs));
      }
      // Following links out walks the disk: only where that stays in the box (not all of /tmp).
      for (const follow of staysInBox(repo, box, spec) ? [false, true] : [false]) {
        const c = { ...config(repo), reading: { maxFileBytes: 1 << 20, followExternalSymlinks: follow } };
        const fromDisk = listIn(c);
        const fromCommit = listIn(c, tree);
        expect(fromCommit.paths, JSON.stringify(spec)).toEqual(fromDisk.paths);
      }
    }), { numRuns: Number(process.env.DUS_PROPERTY_RUNS ?? 40) });
  }, 120_000);
});
