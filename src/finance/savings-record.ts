// Savings and served requests on record (issue 29 item 6): what each app saved (by kind of
// charge, reason and local day: cache, window, coalesced, idempotent, derived) and how many of
// its requests were served, and how many of those without paying, kept in the money store's
// counters (BudgetStore.addSpend / readCounters under keys of their own), so every backend keeps
// them durably for ~400 days and statements can read them after Prometheus forgot them.
//
// Counting is in process: a saving or a served request is one Map update (the hit path included);
// the sums are added to the store every few seconds and on close. A flush that fails keeps its
// sums for the next one (a reply lost after the store applied them may count them twice; the
// failure is logged).
//
// Must never: touch the store on the request path, throw to a caller, or lose a sum it could not
// flush while the process lives.
import type { Clock } from '../clock.ts';
import { localDate } from '../cost/budget-periods.ts';
import type { Store } from '../store/store.ts';

/** How long the counters live after their last change: a year of statements plus a month. */
export const SAVINGS_TTL_MS = 400 * 86_400_000;
/** How often the in-process sums are added to the store. */
export const SAVINGS_FLUSH_MS = 5_000;

/** `savings:<app>:<kind>:<reason>:<YYYY-MM-DD>`: minor units saved (app names have no ':'). */
export function savingsKey(app: string, kind: string, reason: string, day: string): string {
  return `savings:${app}:${kind}:${reason}:${day}`;
}
/** `served:<app>:<YYYY-MM-DD>`: requests answered to the app with a status below 400. */
export function servedKey(app: string, day: string): string {
  return `served:${app}:${day}`;
}
/** `unpaid:<app>:<YYYY-MM-DD>`: served requests no charge was paid for. */
export function unpaidKey(app: string, day: string): string {
  return `unpaid:${app}:${day}`;
}
/** State key marking that `app` has figures in `month` (statements list apps by it). */
export function monthAppKey(month: string, app: string): string {
  return `statement-app:${month}:${app}`;
}
export const MONTH_APP_PREFIX = 'statement-app:';

interface Logger {
  warn(obj: object, msg: string): void;
}

export class SavingsRecord {
  private pending = new Map<string, number>();
  /** `<month>:<app>` pairs already marked in the state store by this process. */
  private readonly marked = new Set<string>();
  /**
   * Per app, the day of its last served() and that day's two keys: a served request (every HIT
   * of the hit path) adds to the same two keys without building them again, and the month's
   * mark is looked at once per app and day.
   */
  private readonly servedKeys = new Map<string, { day: string; served: string; unpaid: string }>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly o: {
      store: Pick<Store, 'addSpend' | 'setIfAbsent'>;
      clock: Clock;
      /** The zone of the days (cost.timeZone; read per call so a reload applies). */
      timeZone: () => string;
      logger: Logger;
      flushMs?: number;
    },
  ) {}

  private add(key: string, n: number): void {
    this.pending.set(key, (this.pending.get(key) ?? 0) + n);
  }

  private day(): string {
    return localDate(this.o.clock.now(), this.o.timeZone());
  }

  /** `amountMinor` an app did not pay for a read of `kind`, and why. */
  saved(app: string, kind: string, reason: string, amountMinor: number): void {
    if (!(amountMinor > 0) || !Number.isSafeInteger(amountMinor)) return;
    this.add(savingsKey(app, kind, reason, this.day()), amountMinor);
  }

  /** One request answered to `app` (status < 400); `paid`: a charge was paid for it. */
  served(app: string, paid: boolean): void {
    const day = this.day();
    let keys = this.servedKeys.get(app);
    const fresh = keys?.day !== day;
    if (keys === undefined || fresh) {
      keys = { day, served: servedKey(app, day), unpaid: unpaidKey(app, day) };
      if (this.servedKeys.size >= 4096) this.servedKeys.clear();
      this.servedKeys.set(app, keys);
    }
    this.add(keys.served, 1);
    if (!paid) this.add(keys.unpaid, 1);
    if (!fresh) return; // the month's mark below was looked at when this day's keys were made
    const mark = `${day.slice(0, 7)}:${app}`;
    if (!this.marked.has(mark)) {
      this.marked.add(mark);
      this.add(`\u0000${mark}`, 1);
    }
  }

  /** Sums not yet in the store (tests, the statement of this replica's own pending figures). */
  get pendingKeys(): number {
    return this.pending.size;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.o.flushMs ?? SAVINGS_FLUSH_MS);
    this.timer.unref();
  }

  /** Adds every pending sum to the store; one flush at a time (a second caller waits for it). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  private async write(batch: Map<string, number>): Promise<void> {
    let failed = 0;
    let lastError = '';
    for (const [key, n] of batch) {
      try {
        if (key.startsWith('\u0000')) {
          const [month, app] = key.slice(1).split(':') as [string, string];
          await this.o.store.setIfAbsent(monthAppKey(month, app), '1', SAVINGS_TTL_MS);
        } else {
          await this.o.store.addSpend([key], n, SAVINGS_TTL_MS);
        }
      } catch (err) {
        failed++;
        lastError = (err as Error)?.message ?? String(err);
        if (key.startsWith('\u0000')) this.pending.set(key, 1);
        else this.add(key, n);
      }
    }
    if (failed > 0)
      this.o.logger.warn(
        { failed, err: lastError },
        'savings and served counts not stored yet; kept for the next flush',
      );
  }

  /** Stops the timer and flushes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
