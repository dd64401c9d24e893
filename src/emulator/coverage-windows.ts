// The coverage-window table of the spec, per account and company: which reads are free,
// which are charged and what window a charge or a finished check leaves behind. Pure
// decisions over an injected clock; it never charges money itself.
import type { Clock } from '../clock.ts';
import { isoMsk } from './time-format.ts';

export type WindowKind = 'dossier' | 'requisites';
/** What a read is: a dossier or section read, or a requisites read. */
export type ReadKind = 'dossier' | 'requisites';

export interface CoverageWindow {
  kind: WindowKind;
  openedAt: number;
  expiresAt: number;
}

export class CoverageWindows {
  private readonly windows = new Map<string, CoverageWindow>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /** The open window for a company, or null (an expired window is no window). */
  get(accountId: number, inn: string): CoverageWindow | null {
    const id = `${accountId}:${inn}`;
    const window = this.windows.get(id);
    if (!window) return null;
    if (window.expiresAt <= this.clock.now()) {
      this.windows.delete(id);
      return null;
    }
    return window;
  }

  /** True when the read is free: a dossier window covers everything, a requisites window only requisites. */
  covers(accountId: number, inn: string, read: ReadKind): boolean {
    const window = this.get(accountId, inn);
    if (!window) return false;
    return window.kind === 'dossier' || read === 'requisites';
  }

  /**
   * Opens a window at `at` (a charge, or the moment a check's data became ready). A
   * requisites window never replaces an open dossier window.
   */
  open(accountId: number, inn: string, kind: WindowKind, at: number = this.clock.now()): CoverageWindow {
    const existing = this.get(accountId, inn);
    if (existing && existing.kind === 'dossier' && kind === 'requisites') return existing;
    const window = { kind, openedAt: at, expiresAt: at + this.windowMs };
    this.windows.set(`${accountId}:${inn}`, window);
    return window;
  }

  list(): Array<{
    account_id: number;
    inn: string;
    kind: WindowKind;
    opened_at: string;
    expires_at: string;
  }> {
    const now = this.clock.now();
    const out = [];
    for (const [id, window] of this.windows) {
      if (window.expiresAt <= now) continue;
      const [account, inn] = id.split(':');
      out.push({
        account_id: Number(account),
        inn: inn!,
        kind: window.kind,
        opened_at: isoMsk(window.openedAt),
        expires_at: isoMsk(window.expiresAt),
      });
    }
    return out;
  }

  reset(): void {
    this.windows.clear();
  }
}
