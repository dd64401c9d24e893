// Per-company coverage windows (api-spec "Coverage window per company"), kept by the Store's money
// role so every replica knows them and opening one is atomic (never a read-modify-write). Each
// company keeps two expiries: until when a dossier window is open, and until when a
// requisites-only window is open (a dossier window covers requisites too). A window is treated as
// closing `safetyMarginMs` early, so a read at the edge is estimated as charged rather than free.
// An expiry is never shortened (the store max-merges).
// The last windows read or written per company are remembered for `memoMs` (known()), so the
// cache-hit path can name the window without a store read; another replica's window opened
// meanwhile is missed for at most that long (a HIT then shows no X-Window-Expires, and is served
// rather than refreshed for free). A known() past half that age asks the store again in the
// background (one read per company at a time), so under steady HITs the memo is renewed before it
// lapses: without it every lapse sent the HITs of the next round trip, all connections' worth,
// down the full pipeline to read Redis, which put the Redis store's HIT p99 at 3-8 ms (issue #12).
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import type { ChargeStore, CompanyWindows, WindowKind, WindowOpening } from '../store/store.ts';

export type { CompanyWindows, WindowKind } from '../store/store.ts';

export interface WindowTrackerOptions {
  store: Pick<ChargeStore, 'windows' | 'openWindow' | 'listWindows'>;
  clock: Clock;
  windowMs: number;
  safetyMarginMs: number;
  /** How long known() trusts the last read (ms on the clock). Default 200; 0 = never. */
  memoMs?: number;
}

/** Companies remembered by known(); past this the memo starts over. */
const MEMO_MAX = 10_000;

export class WindowTracker {
  private readonly memo = new Map<string, { at: number; windows: CompanyWindows }>();
  private readonly memoMs: number;
  /** The last window end expiresText() formatted, and its text. */
  private lastExpiry = { at: Number.NaN, text: '' };
  /** Companies whose windows are being read again for known() (one read each at a time). */
  private readonly renewing = new Set<string>();

  constructor(private readonly options: WindowTrackerOptions) {
    this.memoMs = options.memoMs ?? 200;
  }

  async get(inn: string): Promise<CompanyWindows> {
    const at = this.options.clock.now();
    const windows = await this.options.store.windows(inn);
    this.remember(inn, at, windows);
    return windows;
  }

  /**
   * The company's windows as read or written here within memoMs; undefined when not known. Past
   * half of memoMs it also starts a read of them in the background (its failure only lets the
   * memo lapse: the full pipeline then reads, and handles the store's errors).
   */
  known(inn: string): CompanyWindows | undefined {
    const hit = this.memo.get(inn);
    if (!hit) return undefined;
    const age = this.options.clock.now() - hit.at;
    if (age < 0 || age >= this.memoMs) return undefined;
    if (age >= this.memoMs / 2) this.renew(inn);
    return hit.windows;
  }

  private renew(inn: string): void {
    if (this.renewing.has(inn)) return;
    this.renewing.add(inn);
    this.get(inn)
      .catch(() => undefined)
      .finally(() => this.renewing.delete(inn));
  }

  /**
   * The company's windows as last read or written here, at any age, when they make a read of
   * `need` free now: a guess to act on while the store is asked, never an answer (an expiry is
   * never lengthened behind this replica's back while it covers, but another replica's requisites
   * check can end a dossier window early). undefined otherwise.
   */
  guess(inn: string, need: WindowKind): CompanyWindows | undefined {
    const hit = this.memo.get(inn);
    return hit && this.covers(hit.windows, need) ? hit.windows : undefined;
  }

  /** Remembers windows the store answered by other means (a charge's record returns them). */
  learn(inn: string, windows: CompanyWindows): void {
    this.remember(inn, this.options.clock.now(), windows);
  }

  /** When the window that makes a read of `need` free really ends (no margin); 0 if none. */
  expiry(windows: CompanyWindows, need: WindowKind): number {
    return need === 'dossier'
      ? windows.dossierUntil
      : Math.max(windows.dossierUntil, windows.requisitesUntil);
  }

  /**
   * X-Window-Expires: when the window that makes a read of `need` free ends, as ISO text, or
   * undefined when it has ended. The text of the last end asked for is kept (a window's reads all
   * write the same one; formatting it was ~1.4 µs a read on a 2-core VM).
   */
  expiresText(windows: CompanyWindows, need: WindowKind): string | undefined {
    const expiry = this.expiry(windows, need);
    if (expiry <= this.options.clock.now()) return undefined;
    if (expiry !== this.lastExpiry.at) this.lastExpiry = { at: expiry, text: new Date(expiry).toISOString() };
    return this.lastExpiry.text;
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
    const at = this.options.clock.now();
    const windows = await this.options.store.openWindow(inn, kind, this.until(openedAt), at);
    this.remember(inn, at, windows);
    return windows;
  }

  /**
   * The windows after a charge at `openedAt`, computed locally (max-merge) for when the store
   * could not answer: what the app is told matches what the store will hold once it returns.
   */
  openedAt(windows: CompanyWindows | undefined, kind: WindowKind, openedAt: number): CompanyWindows {
    const base = windows ?? { dossierUntil: 0, requisitesUntil: 0 };
    const until = this.until(openedAt);
    return kind === 'dossier'
      ? copyWith(base, { dossierUntil: Math.max(base.dossierUntil, until) })
      : copyWith(base, { requisitesUntil: Math.max(base.requisitesUntil, until) });
  }

  /** Keeps what a read or write started at `at` answered, unless one started later already answered. */
  private remember(inn: string, at: number, windows: CompanyWindows): void {
    if (this.memoMs <= 0) return;
    const held = this.memo.get(inn);
    if (held && held.at > at) return;
    if (this.memo.size >= MEMO_MAX && !this.memo.has(inn)) this.memo.clear();
    this.memo.set(inn, { at, windows });
  }

  /** Companies with an open window (admin listing), at most `limit`. */
  async list(limit = 1000): Promise<Array<CompanyWindows & { inn: string }>> {
    return this.options.store.listWindows(this.options.clock.now(), limit);
  }
}
