// Per-company coverage windows (api-spec "Coverage window per company"), shared through the
// Store so every replica knows them. Each company keeps two expiries: until when a dossier
// window is open, and until when a requisites-only window is open (a dossier window covers
// requisites too). A window is treated as closing `safetyMarginMs` early, so a read at the
// edge is estimated as charged rather than free. An expiry is never shortened.
import type { Clock } from '../clock.ts';
import type { Store } from '../store/store.ts';

export type WindowKind = 'dossier' | 'requisites';

export interface CompanyWindows {
  /** ms epoch; 0 when no dossier window was seen. */
  dossierUntil: number;
  /** ms epoch; 0 when no requisites window was seen. */
  requisitesUntil: number;
}

export interface WindowTrackerOptions {
  store: Store;
  clock: Clock;
  windowMs: number;
  safetyMarginMs: number;
}

const key = (inn: string) => `window:${inn}`;
const NONE: CompanyWindows = { dossierUntil: 0, requisitesUntil: 0 };

export class WindowTracker {
  constructor(private readonly options: WindowTrackerOptions) {}

  async get(inn: string): Promise<CompanyWindows> {
    const raw = await this.options.store.get(key(inn));
    return raw ? (JSON.parse(raw) as CompanyWindows) : NONE;
  }

  /** When the window that makes a read of `need` free really ends (no margin); 0 if none. */
  expiry(windows: CompanyWindows, need: WindowKind): number {
    return need === 'dossier'
      ? windows.dossierUntil
      : Math.max(windows.dossierUntil, windows.requisitesUntil);
  }

  /** True when an open window makes a read of `need` free now (with the safety margin). */
  covers(windows: CompanyWindows, need: WindowKind): boolean {
    return this.expiry(windows, need) - this.options.safetyMarginMs > this.options.clock.now();
  }

  /**
   * Records a window opened at `openedAt`: the earliest moment the upstream could have
   * charged (or readied a check's data), so our expiry is never later than the upstream's.
   */
  async open(inn: string, kind: WindowKind, openedAt: number): Promise<CompanyWindows> {
    const existing = await this.get(inn);
    const until = openedAt + this.options.windowMs;
    const next: CompanyWindows =
      kind === 'dossier'
        ? { ...existing, dossierUntil: Math.max(existing.dossierUntil, until) }
        : { ...existing, requisitesUntil: Math.max(existing.requisitesUntil, until) };
    const ttl = Math.max(next.dossierUntil, next.requisitesUntil) - this.options.clock.now();
    if (ttl > 0) await this.options.store.set(key(inn), JSON.stringify(next), ttl);
    return next;
  }

  /** Companies with an open window (admin listing), at most `limit`. */
  async list(limit = 1000): Promise<Array<CompanyWindows & { inn: string }>> {
    const now = this.options.clock.now();
    const out: Array<CompanyWindows & { inn: string }> = [];
    for (const k of await this.options.store.keys('window:', limit)) {
      const inn = k.slice(k.lastIndexOf(':') + 1);
      const w = await this.get(inn);
      if (Math.max(w.dossierUntil, w.requisitesUntil) > now) out.push({ inn, ...w });
    }
    return out;
  }
}
