// The coverage-window table of the spec, per account and company: which reads are free,
// which are charged and what window a charge or a finished check leaves behind. A company
// holds at most one dossier and one requisites window (both only in the `both` reading of a
// requisites check). Pure decisions over an injected clock; it never charges money itself.
import type { Clock } from '../clock.ts';
import type { RequisitesCheckWindow } from './emulator-modes.ts';
import { isoMsk } from './time-format.ts';

export type WindowKind = 'dossier' | 'requisites';
/** What a read is: a dossier or section read, or a requisites read. */
export type ReadKind = 'dossier' | 'requisites';

export interface CoverageWindow {
  kind: WindowKind;
  openedAt: number;
  expiresAt: number;
}

type CompanyWindows = Partial<Record<WindowKind, CoverageWindow>>;

export class CoverageWindows {
  private readonly windows = new Map<string, CompanyWindows>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  /** The open window that covers most (dossier before requisites), or null (expired = none). */
  get(accountId: number, inn: string): CoverageWindow | null {
    const company = this.live(`${accountId}:${inn}`);
    return company?.dossier ?? company?.requisites ?? null;
  }

  /** True when the read is free: a dossier window covers everything, a requisites window only requisites. */
  covers(accountId: number, inn: string, read: ReadKind): boolean {
    const company = this.live(`${accountId}:${inn}`);
    if (!company) return false;
    return company.dossier !== undefined || (read === 'requisites' && company.requisites !== undefined);
  }

  /**
   * Opens a window by a charge at `at`. A dossier window replaces whatever was open (the
   * requisites → dossier upgrade); a requisites window never replaces an open dossier window.
   */
  open(accountId: number, inn: string, kind: WindowKind, at: number = this.clock.now()): CoverageWindow {
    const id = `${accountId}:${inn}`;
    const existing = this.live(id);
    if (existing?.dossier && kind === 'requisites') return existing.dossier;
    const window = this.window(kind, at);
    this.windows.set(id, { [kind]: window });
    return window;
  }

  /**
   * The window a finished check opens at the instant its data was ready. A dossier check
   * opens a dossier window (replacing any). A requisites check, by `mode`: `table` (the
   * spec's row "any → requisites window"): the company's window becomes a requisites window,
   * an open dossier window ends; `both`: a requisites window opens beside an open dossier
   * window; `keep`: an open dossier window stays and no requisites window opens.
   */
  openFromCheck(
    accountId: number,
    inn: string,
    kind: WindowKind,
    at: number,
    mode: RequisitesCheckWindow,
  ): CoverageWindow {
    const id = `${accountId}:${inn}`;
    const existing = this.live(id);
    if (kind === 'dossier' || mode === 'table' || !existing?.dossier) {
      const window = this.window(kind, at);
      this.windows.set(id, { [kind]: window });
      return window;
    }
    if (mode === 'keep') return existing.dossier;
    const window = this.window('requisites', at);
    this.windows.set(id, { ...existing, requisites: window });
    return window;
  }

  list(): Array<{
    account_id: number;
    inn: string;
    kind: WindowKind;
    opened_at: string;
    expires_at: string;
  }> {
    const out = [];
    for (const id of [...this.windows.keys()]) {
      const company = this.live(id);
      if (!company) continue;
      const [account, inn] = id.split(':');
      for (const window of [company.dossier, company.requisites]) {
        if (!window) continue;
        out.push({
          account_id: Number(account),
          inn: inn!,
          kind: window.kind,
          opened_at: isoMsk(window.openedAt),
          expires_at: isoMsk(window.expiresAt),
        });
      }
    }
    return out;
  }

  reset(): void {
    this.windows.clear();
  }

  private window(kind: WindowKind, at: number): CoverageWindow {
    return { kind, openedAt: at, expiresAt: at + this.windowMs };
  }

  /** The company's unexpired windows (expired ones dropped), or null when none is open. */
  private live(id: string): CompanyWindows | null {
    const company = this.windows.get(id);
    if (!company) return null;
    const now = this.clock.now();
    const live: CompanyWindows = {};
    if (company.dossier && company.dossier.expiresAt > now) live.dossier = company.dossier;
    if (company.requisites && company.requisites.expiresAt > now) live.requisites = company.requisites;
    if (!live.dossier && !live.requisites) {
      this.windows.delete(id);
      return null;
    }
    if (live.dossier !== company.dossier || live.requisites !== company.requisites)
      this.windows.set(id, live);
    return live;
  }
}
