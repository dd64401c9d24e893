// Per-company coverage windows (api-spec "Coverage window per company"), kept by the Store's money
// role so every replica knows them and opening one is atomic (never a read-modify-write). Each
// company keeps two expiries: until when a dossier window is open, and until when a
// requisites-only window is open (a dossier window covers requisites too). A window is treated as
// closing `safetyMarginMs` early, so a read at the edge is estimated as charged rather than free.
// An expiry is never shortened (the store max-merges).
import type { Clock } from '../clock.ts';
import type { ChargeStore, CompanyWindows, WindowKind, WindowOpening } from '../store/store.ts';

export type { CompanyWindows, WindowKind } from '../store/store.ts';

export interface WindowTrackerOptions {
  store: Pick<ChargeStore, 'windows' | 'openWindow' | 'listWindows'>;
  clock: Clock;
  windowMs: number;
  safetyMarginMs: number;
}

export class WindowTracker {
  constructor(private readonly options: WindowTrackerOptions) {}

  async get(inn: string): Promise<CompanyWindows> {
    return this.options.store.windows(inn);
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

  /** When a window opened at `openedAt` ends. */
  until(openedAt: number): number {
    return openedAt + this.options.windowMs;
  }

  /**
   * Records a window opened at `openedAt`: the earliest moment the upstream could have
   * charged (or readied a check's data), so our expiry is never later than the upstream's.
   */
  async open(inn: string, kind: WindowOpening, openedAt: number): Promise<CompanyWindows> {
    return this.options.store.openWindow(inn, kind, this.until(openedAt), this.options.clock.now());
  }

  /**
   * The windows after a charge at `openedAt`, computed locally (max-merge) for when the store
   * could not answer: what the app is told matches what the store will hold once it returns.
   */
  openedAt(windows: CompanyWindows | undefined, kind: WindowKind, openedAt: number): CompanyWindows {
    const base = windows ?? { dossierUntil: 0, requisitesUntil: 0 };
    const until = this.until(openedAt);
    return kind === 'dossier'
      ? { ...base, dossierUntil: Math.max(base.dossierUntil, until) }
      : { ...base, requisitesUntil: Math.max(base.requisitesUntil, until) };
  }

  /** Companies with an open window (admin listing), at most `limit`. */
  async list(limit = 1000): Promise<Array<CompanyWindows & { inn: string }>> {
    return this.options.store.listWindows(this.options.clock.now(), limit);
  }
}
