// Holds what the status page shows between passes: the last pass's result and the last one that
// got as far as a plan (an API outage keeps the tenants' last known state on the page, dated).
// The watch loop records each pass here; GET / renders from this memory only, never from the API.
import { createHash } from 'node:crypto';
import type { PassDetail } from '../core/status-detail.js';
import { PAGE_STYLE, renderStatusPage, type StatusPageInput } from '../core/render/status-page.js';
import { redact, redactDeep, secretsGeneration } from '../redact.js';
import type { PassRecorder } from './watch.js';
import type { PassResult } from './types.js';

/** The page allows no script at all, and only its own inline style (by hash). */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    `style-src 'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`,
    "script-src 'none'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export const DEFAULT_REFRESH_SECONDS = 10;

export type PageAgentState = StatusPageInput['agent'];

export class StatusBoard implements PassRecorder {
  private last: StatusPageInput['last'];
  private tenants: { detail: PassDetail; at: number } | undefined;
  private passes = 0;
  /** The page as last rendered: reloads within the same second cost a string comparison. */
  private cached: { key: string; html: string } | undefined;

  constructor(private readonly opts: { readonly version?: string; readonly refreshSeconds?: number } = {}) {}

  /**
   * Redacted once here, per pass: a key a server echoed into a phase name or an error must not
   * reach the page (send() redacts the page again on the way out).
   */
  recordPass(result: PassResult, _durationMs: number, now: number): void {
    this.last = redactDeep({
      result: result.result,
      message: result.message,
      at: now,
      ...(result.issues ? { issues: result.issues, issueTotal: result.issueTotal ?? result.issues.length } : {}),
    });
    if (result.detail) this.tenants = { detail: redactDeep(result.detail), at: now };
    this.passes += 1;
  }

  /**
   * The page, rendered at most once a second for the same state (its times are to the second):
   * a large one takes tens of milliseconds, and any number of viewers may reload it.
   */
  render(agent: PageAgentState, now: number): string {
    const key = `${this.passes}|${secretsGeneration()}|${Math.floor(now / 1000)}|${JSON.stringify(agent)}`;
    if (this.cached?.key === key) return this.cached.html;
    const html = redact(renderStatusPage({
      now,
      refreshSeconds: this.opts.refreshSeconds ?? DEFAULT_REFRESH_SECONDS,
      agent,
      ...(this.opts.version ? { version: this.opts.version } : {}),
      ...(this.last ? { last: this.last } : {}),
      ...(this.tenants ? { tenants: this.tenants } : {}),
    }));
    this.cached = { key, html };
    return html;
  }
}
