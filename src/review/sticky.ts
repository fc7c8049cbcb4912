// One sticky comment per pull request (GitHub) or merge request (GitLab): found by a hidden
// marker at its very start AND by its author being the token's own user, then updated; created
// when there is none. A comment by anyone else that holds the marker (a quote, a copy, a
// forgery) is never edited, nor one of the same user (every workflow comments as
// github-actions[bot]) that only quotes it, nor another config's comment that holds it in text.
import { UserError } from '../errors.js';
import { readRegularFile } from '../load/read-file.js';
import { apiRoot, HostError, request, rootPath, serverMessage, under, type HostResponse } from './http.js';

/** Pages read at most while looking for ours: 3,000 GitHub comments, 1,500 GitLab notes. */
export const MAX_PAGES = 150;
const GITHUB_PER_PAGE = 20;
const GITLAB_PER_PAGE = 10;
/** GITHUB_TOKEN's user; /user is not open to it, so this is who wrote our earlier comments. */
export const GITHUB_ACTIONS_BOT = 'github-actions[bot]';
const MAX_EVENT_BYTES = 64 * 1024 * 1024;

export interface StickyResult {
  readonly action: 'created' | 'updated' | 'unchanged';
  readonly id: number;
  /** The page more comments were left unread on, when the search stopped at MAX_PAGES. */
  readonly truncated: boolean;
}

export interface StickyTarget {
  /** Where, for messages: "pull request #12 of o/r". */
  readonly where: string;
  post(body: string, marker: string): Promise<StickyResult>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(what: string, res: HostResponse, hint = ''): never {
  const said = serverMessage(res.json);
  throw new HostError(`${what}: HTTP ${res.status}${said ? ` (${said})` : ''}${hint}`, res.status);
}

const ok = (res: HostResponse) => res.status >= 200 && res.status < 300;

/** The next page of a GitHub list, only when it is under the same API root (the token goes with it). */
function nextLink(res: HostResponse, root: URL): URL | undefined {
  const link = res.headers.get('link');
  const m = link?.split(',').map((part) => /<([^>]+)>\s*;\s*rel="?next"?/.exec(part.trim())).find(Boolean);
  if (!m) return undefined;
  try {
    const next = new URL(m[1]!, root);
    return next.origin === root.origin && next.pathname.startsWith(`${rootPath(root)}/`) ? next : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- GitHub

export interface GitHubOptions {
  readonly token: string;
  /** The login of the comment's author, when it is not the GITHUB_TOKEN's bot (a GitHub App, a PAT's user is found by itself). */
  readonly author?: string;
}

/** The pull request number of the event that started the workflow, if it is about one. */
export function pullRequestNumber(eventPath: string | undefined): number | undefined {
  if (!eventPath) return undefined;
  let event: unknown;
  try {
    // Bounded while reading, regular files only: a FIFO or /dev/zero there must not hang the job.
    const read = readRegularFile(eventPath, { maxBytes: MAX_EVENT_BYTES });
    if (!read.ok) return undefined;
    event = JSON.parse(read.text);
  } catch {
    return undefined;
  }
  if (!isObject(event)) return undefined;
  const pr = event.pull_request;
  const issue = event.issue;
  const n = isObject(pr) ? pr.number : isObject(issue) && isObject(issue.pull_request) ? issue.number : undefined;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

export function githubTarget(env: NodeJS.ProcessEnv, opts: GitHubOptions): StickyTarget | string {
  const repository = env.GITHUB_REPOSITORY ?? '';
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repository)) return 'GITHUB_REPOSITORY is not set as owner/name';
  const number = pullRequestNumber(env.GITHUB_EVENT_PATH);
  if (number === undefined) return 'the workflow was not started by a pull request (no pull request number in GITHUB_EVENT_PATH)';
  const root = apiRoot(env.GITHUB_API_URL || 'https://api.github.com', 'GITHUB_API_URL');
  const [owner, repo] = repository.split('/').map(encodeURIComponent) as [string, string];
  const headers = {
    authorization: `Bearer ${opts.token}`,
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'dus-sync-review',
  };

  async function author(): Promise<string> {
    if (opts.author) return opts.author;
    const me = await request(under(root, '/user'), { headers });
    // A personal token knows its user; GITHUB_TOKEN (an app installation token) gets 403 here.
    if (ok(me) && isObject(me.json) && typeof me.json.login === 'string') return me.json.login;
    return GITHUB_ACTIONS_BOT;
  }

  return {
    where: `pull request #${number} of ${repository}`,
    async post(body, marker) {
      const login = await author();
      let url: URL | undefined = under(root, `/repos/${owner}/${repo}/issues/${number}/comments?per_page=${GITHUB_PER_PAGE}`);
      let found: { id: number; body: string } | undefined;
      let pages = 0;
      while (url && !found && pages < MAX_PAGES) {
        const res = await request(url, { headers });
        pages++;
        if (!ok(res)) fail('could not list the comments', res);
        if (!Array.isArray(res.json)) throw new HostError('could not list the comments: the answer is not a list', res.status);
        for (const c of res.json) {
          if (!isObject(c) || !isObject(c.user) || typeof c.id !== 'number' || typeof c.body !== 'string') continue;
          if (c.user.login === login && c.body.startsWith(marker)) { found = { id: c.id, body: c.body }; break; }
        }
        url = found ? undefined : nextLink(res, root);
      }
      const truncated = !found && url !== undefined;
      const forkHint = ' (a pull request from a fork gets a read-only token: the result is in the job summary)';
      if (found) {
        if (found.body === body) return { action: 'unchanged', id: found.id, truncated };
        const res = await request(under(root, `/repos/${owner}/${repo}/issues/comments/${found.id}`), { method: 'PATCH', headers, body: { body } });
        if (!ok(res)) fail('could not update the comment', res, res.status === 403 ? forkHint : '');
        return { action: 'updated', id: found.id, truncated };
      }
      const res = await request(under(root, `/repos/${owner}/${repo}/issues/${number}/comments`), { method: 'POST', headers, body: { body } });
      if (!ok(res)) fail('could not create the comment', res, res.status === 403 ? forkHint : '');
      const id = isObject(res.json) && typeof res.json.id === 'number' ? res.json.id : 0;
      return { action: 'created', id, truncated };
    },
  };
}

// ---------------------------------------------------------------- GitLab

export function gitlabTarget(env: NodeJS.ProcessEnv, token: string): StickyTarget | string {
  const project = env.CI_PROJECT_ID ?? '';
  const iid = env.CI_MERGE_REQUEST_IID ?? '';
  if (!/^\d+$/.test(iid)) return 'the pipeline is not a merge-request pipeline (CI_MERGE_REQUEST_IID is not set)';
  if (project === '') return 'CI_PROJECT_ID is not set';
  if (!env.CI_API_V4_URL) return 'CI_API_V4_URL is not set';
  const root = apiRoot(env.CI_API_V4_URL, 'CI_API_V4_URL');
  const notes = `/projects/${encodeURIComponent(project)}/merge_requests/${iid}/notes`;
  const headers = { 'private-token': token, 'user-agent': 'dus-sync-review' };

  return {
    where: `merge request !${iid}`,
    async post(body, marker) {
      const me = await request(under(root, '/user'), { headers });
      if (!ok(me) || !isObject(me.json) || typeof me.json.id !== 'number') fail('could not tell whose token this is (GET /user)', me);
      const myId = me.json.id;
      let page: string | undefined = '1';
      let found: { id: number; body: string } | undefined;
      let pages = 0;
      while (page && !found && pages < MAX_PAGES) {
        const res = await request(under(root, `${notes}?per_page=${GITLAB_PER_PAGE}&page=${encodeURIComponent(page)}&sort=asc&order_by=created_at`), { headers });
        pages++;
        if (!ok(res)) fail('could not list the notes', res);
        if (!Array.isArray(res.json)) throw new HostError('could not list the notes: the answer is not a list', res.status);
        for (const n of res.json) {
          if (!isObject(n) || !isObject(n.author) || typeof n.id !== 'number' || typeof n.body !== 'string' || n.system === true) continue;
          if (n.author.id === myId && n.body.startsWith(marker)) { found = { id: n.id, body: n.body }; break; }
        }
        const next = res.headers.get('x-next-page') ?? '';
        page = /^\d+$/.test(next) ? next : undefined;
      }
      const truncated = !found && page !== undefined;
      if (found) {
        if (found.body === body) return { action: 'unchanged', id: found.id, truncated };
        const res = await request(under(root, `${notes}/${found.id}`), { method: 'PUT', headers, body: { body } });
        if (!ok(res)) fail('could not update the note', res);
        return { action: 'updated', id: found.id, truncated };
      }
      const res = await request(under(root, notes), { method: 'POST', headers, body: { body } });
      if (!ok(res)) fail('could not create the note', res);
      const id = isObject(res.json) && typeof res.json.id === 'number' ? res.json.id : 0;
      return { action: 'created', id, truncated };
    },
  };
}

/** A marker is `<!-- dus-sync-plan -->`, or `<!-- dus-sync-plan:NAME -->` for one of several configs in a repository. */
export function markerFor(name: string | undefined): string {
  if (name === undefined || name === '') return '<!-- dus-sync-plan -->';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new UserError('--marker takes 1 to 64 letters, digits, dots, dashes or underscores');
  return `<!-- dus-sync-plan:${name} -->`;
}
