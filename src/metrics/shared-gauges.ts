// Gauges of state every replica shares (budgets and their forecasts, rate classes, windows, prices, cache bytes),
// read from the store at scrape time through the modules' public read APIs. Every replica
// reports the same value, so dashboards and alerts take `max` across instances, never `sum`.
// The local rate queue depth is this replica's own (sum it).
//
// Cost is bounded: one budget status read per configured app (plus, at most once an hour, the
// day counters of the last 7 days its forecast uses: budget-guard.ts), one limiter snapshot, at most
// `windowsScanLimit` window reads, one cache-bytes read; reads closer together than
// `minIntervalMs` reuse the last result, and a read slower than `timeoutMs` (or a store fault)
// leaves the last values in place and sets cpgw_store_up to 0.
//
// Must never: write to the store, or make a scrape wait longer than timeoutMs.
import type { Clock } from '../clock.ts';
import type { BudgetGuard, BudgetStatus } from '../cost/budget-guard.ts';
import { type Period, periodId } from '../cost/budget-periods.ts';
import type { PriceBook } from '../cost/price-book.ts';
import type { WindowTracker } from '../cost/window-tracker.ts';
import type { RateGovernor } from '../limits/index.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { PRICE_KINDS } from './gateway-metrics.ts';
import { GLOBAL_APP } from './metric-catalogue.ts';

export interface SharedSources {
  budgets: Pick<BudgetGuard, 'status'>;
  governor: Pick<RateGovernor, 'state'>;
  windows: Pick<WindowTracker, 'list'>;
  prices: Pick<PriceBook, 'snapshot'>;
  cache: { stats(): Promise<{ bytes: number | null }> };
  /** The money backlog: the oldest pending charge (shared) and this replica's outbox. */
  backlog?: () => Promise<{ pendingOldestAt: number | null; outboxEntries: number }>;
}

export interface SharedGaugesOptions {
  metrics: GatewayMetrics;
  sources: SharedSources;
  /** The apps in force now (a reload adds or removes apps: their series follow). */
  apps: () => readonly string[];
  clock: Clock;
  timeZone: string;
  timeoutMs: number;
  minIntervalMs: number;
  windowsScanLimit: number;
}

export class SharedGauges {
  private lastAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | null = null;

  constructor(private readonly o: SharedGaugesOptions) {}

  /** Brings the shared gauges up to date (or gives up after timeoutMs). Never throws. */
  async refresh(): Promise<void> {
    const { clock, metrics } = this.o;
    const now = clock.now();
    metrics.m.budgetPeriodRemaining.set({ period: 'day' }, secondsLeftInPeriod('day', now, this.o.timeZone));
    metrics.m.budgetPeriodRemaining.set(
      { period: 'month' },
      secondsLeftInPeriod('month', now, this.o.timeZone),
    );
    this.prices();
    if (now - this.lastAt < this.o.minIntervalMs) return;
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = null;
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const started = performance.now();
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.o.timeoutMs);
    });
    const outcome = await Promise.race([
      this.inFlight.then(
        () => 'ok' as const,
        () => 'error' as const,
      ),
      timedOut,
    ]);
    clearTimeout(timer);
    metrics.m.sharedReadSeconds.set((performance.now() - started) / 1000);
    metrics.m.storeUp.set(outcome === 'ok' ? 1 : 0);
    if (outcome === 'ok') this.lastAt = now;
    else metrics.storeError('scrape');
  }

  private prices(): void {
    const { m } = this.o.metrics;
    const me = this.o.sources.prices.snapshot().me;
    for (const p of me?.prices ?? []) {
      if ((PRICE_KINDS as readonly string[]).includes(p.key)) m.price.set({ kind: p.key }, p.price_minor);
    }
    if (me?.wallet) m.walletBalance.set(me.wallet.balance_minor);
  }

  private async read(): Promise<void> {
    const { sources, metrics } = this.o;
    const apps = this.o.apps();
    const { m } = metrics;
    const [statuses, state, windows, cache, backlog] = await Promise.all([
      Promise.all(apps.map((app) => sources.budgets.status(app))),
      sources.governor.state(),
      sources.windows.list(this.o.windowsScanLimit),
      sources.cache.stats(),
      sources.backlog?.() ?? null,
    ]);
    if (backlog) {
      const at = backlog.pendingOldestAt;
      metrics.setLedgerBacklog({
        pendingOldestAgeSeconds: at === null ? 0 : Math.max(0, (this.o.clock.now() - at) / 1000),
        outboxEntries: backlog.outboxEntries,
      });
    }
    const budgetRows: Array<{ app: string; s: BudgetStatus }> = [];
    statuses.forEach((list, i) => {
      for (const s of list) if (s.scope === 'app') budgetRows.push({ app: apps[i]!, s });
    });
    for (const s of statuses[0] ?? []) if (s.scope === 'global') budgetRows.push({ app: GLOBAL_APP, s });
    for (const { app, s } of budgetRows) {
      const labels = { app, period: s.period };
      m.budgetSpent.set(labels, s.spentMinor);
      m.budgetReserved.set(labels, s.reservedMinor);
      m.budgetForecast.set(labels, s.forecastMinor);
      // A cap finance removed (limit null) drops its series instead of showing the old cap.
      if (s.limitMinor !== null) m.budgetLimit.set(labels, s.limitMinor);
      else m.budgetLimit.remove(labels);
      if (s.softMinor !== null) {
        m.budgetSoft.set(labels, s.softMinor);
        m.budgetSoftExceeded.set(labels, s.spentMinor >= s.softMinor ? 1 : 0);
      } else {
        m.budgetSoft.remove(labels);
        m.budgetSoftExceeded.remove(labels);
      }
    }
    for (const c of state.classes) {
      m.rateLimit.set({ limit: c.name }, c.limit);
      m.rateRemaining.set({ limit: c.name }, Math.max(0, c.limit - c.used));
      m.ratePaused.set({ limit: c.name }, c.pausedForMs / 1000);
      m.queueDepth.set(
        { limit: c.name },
        Object.values(c.queued).reduce((a, b) => a + b, 0),
      );
    }
    const now = this.o.clock.now();
    let dossier = 0;
    let requisites = 0;
    for (const w of windows) {
      if (w.dossierUntil > now) dossier++;
      else if (w.requisitesUntil > now) requisites++;
    }
    m.windowsOpen.set({ kind: 'dossier' }, dossier);
    m.windowsOpen.set({ kind: 'requisites' }, requisites);
    if (cache.bytes !== null) m.cacheBytes.set(cache.bytes);
  }
}

/** Seconds from `now` until the period containing it ends in the zone (binary search, 1 s). */
export function secondsLeftInPeriod(period: Period, now: number, timeZone: string): number {
  const id = periodId(period, now, timeZone);
  let lo = now;
  let hi = now + (period === 'day' ? 2 : 32) * 86_400_000;
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2);
    if (periodId(period, mid, timeZone) === id) lo = mid;
    else hi = mid;
  }
  return Math.round((hi - now) / 1000);
}
