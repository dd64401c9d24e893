// This replica's copy of the budget overrides finance set (FinanceStore), kept fresh two ways so a
// change applies on every replica within a second: a bus message from the replica that made the
// change (refresh at once), and a settings-version read at most every `memoMs` on the reserve
// path (BudgetGuard.refresh, awaited by the budget stage), so a replica that missed the message
// (pub/sub is a hint, not a queue) still obeys within memoMs. Only when the version moved are the
// budgets read again. Once started (server/lifecycle.ts), the version is also read in the
// background every 0.8 memoMs, so while the store answers the reserve path finds the copy checked
// and never waits for that read (issue 33: on a quiet gateway, one call every memoMs or less often,
// every paid call and every in-window read waited for it, a store round trip before the open).
//
// Must never: throw into the reserve path (a store fault keeps the last copy and is reported;
// the reserve step itself then meets the same store), or let an older read replace a newer copy.
import type { Clock } from '../clock.ts';
import type { Period } from '../cost/budget-periods.ts';
import { keepAlive, type Lease } from '../cost/lease.ts';
import type { FinanceStore, StoredBudget } from './finance-store.ts';

/** The bus channel a budget change is announced on (message: the new settings version). */
export const BUDGETS_CHANNEL = 'finance:budgets';

export interface BudgetOverridesOptions {
  store: FinanceStore;
  clock: Clock;
  /** How long a settings-version read is trusted on the reserve path. Default 250 ms. */
  memoMs?: number;
  onError?: (error: unknown) => void;
}

export class BudgetOverrides {
  private budgets = new Map<string, StoredBudget>();
  private version = -1;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | null = null;
  private readonly memoMs: number;
  /** Set while reads fail: a fault is reported once per outage, not every memoMs. */
  private failing = false;
  /** The background renewal while started. */
  private keeper: Lease | null = null;

  constructor(private readonly options: BudgetOverridesOptions) {
    this.memoMs = options.memoMs ?? 250;
  }

  /** The stored budget of a scope and period (either source), as of the last refresh. */
  get(scope: string, period: Period): StoredBudget | undefined {
    return this.budgets.get(`${scope}:${period}`);
  }

  /** The override that wins over the config (source "admin"), if any. */
  active(scope: string, period: Period): StoredBudget | undefined {
    const found = this.get(scope, period);
    return found?.source === 'admin' ? found : undefined;
  }

  /** The settings version of the copy (-1 before the first read). */
  get settingsVersion(): number {
    return this.version;
  }

  /** Brings the copy up to date unless it was checked within memoMs. Never throws. */
  fresh(): Promise<void> {
    if (this.options.clock.now() - this.checkedAt < this.memoMs) return Promise.resolve();
    return this.read();
  }

  /**
   * Reads the version every 0.8 memoMs (on the injected clock) until stop(), so the copy is
   * renewed before the reserve path would have to wait for it. Idempotent.
   */
  start(): void {
    // load() never throws: the loop goes on through store faults, which it reports itself.
    this.keeper ??= keepAlive(this.options.clock, Math.max(1, Math.floor(this.memoMs * 0.8)), () =>
      this.read().then(() => true),
    );
  }

  /** Ends the background renewal (shutdown); a read under way is waited for. */
  async stop(): Promise<void> {
    this.keeper?.stop();
    this.keeper = null;
    await this.inFlight;
  }

  /** One read of the version (and the budgets when it moved), shared by whoever asks meanwhile. */
  private read(): Promise<void> {
    this.inFlight ??= this.load().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  /** Forgets the memo (a bus message, or this replica's own write) and reads again. */
  invalidate(): Promise<void> {
    this.checkedAt = Number.NEGATIVE_INFINITY;
    // A read already under way may predate the change: wait for it, then read again.
    return (this.inFlight ?? Promise.resolve()).then(() => this.fresh());
  }

  private async load(): Promise<void> {
    const { store, clock } = this.options;
    const started = clock.now();
    try {
      const version = await store.settingsVersion();
      if (version !== this.version) {
        const read = await store.readBudgets();
        if (read.settingsVersion >= this.version) {
          this.budgets = new Map(read.budgets.map((b) => [`${b.scope}:${b.period}`, b]));
          this.version = read.settingsVersion;
        }
      }
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.options.onError?.(error);
      this.failing = true;
    }
    this.checkedAt = started;
  }
}
