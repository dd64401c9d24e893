// Spend caps per app and overall, per calendar day and month in the configured time zone: which
// counters a charge of an app is held and settled on, what a refusal says (BudgetDenial, a
// value, not an exception), and the budgets' status. Holding and settling are the money role's
// atomic steps (ChargeBook: openCharge before the call, recordCharge after it); budget maths
// lives here once.
//
// Which limit applies (issue 29): a budget finance set through the admin API (source "admin", in
// the FinanceStore, copied on each replica by BudgetOverrides) wins over the YAML `budgets:`
// (source "config") until it is DELETEd; finance acts without a deploy. refresh() brings that
// copy up to date (a settings-version read memoized for a moment) and runs before every hold.
//
// Forecasts (issue 29): status() also gives each budget's period-end spend forecast
// (finance/forecast.ts states the method), from the day counters of the last 7 full days. Those
// counters live on after their day (settling sets the month's TTL), and are read at most once an
// hour per scope (a cache per store, kept across reloads): they only change when a late charge
// settles on yesterday's counter.
import type { Clock } from '../clock.ts';
import type { BudgetOverrides } from '../finance/budget-overrides.ts';
import { GLOBAL_SCOPE } from '../finance/finance-store.ts';
import { type ForecastPlan, forecastPlan, forecastSpend } from '../finance/forecast.ts';
import type { BudgetCounterSpec, BudgetStore, CounterState, ReserveResult } from '../store/store.ts';
import { budgetCounterKey, PERIODS, type Period, periodId, periodTtlMs } from './budget-periods.ts';

export interface BudgetLimit {
  limitMinor: number;
  /** Alert threshold (metrics/admin only); never refuses. */
  softMinor?: number | undefined;
}

export type BudgetLimits = Partial<Record<Period, BudgetLimit>>;

export interface BudgetGuardOptions {
  store: BudgetStore;
  clock: Clock;
  timeZone: string;
  global: BudgetLimits;
  apps: ReadonlyMap<string, BudgetLimits>;
  /** Told of every refusal and every settled charge (metrics, soft-limit notices); must not throw. */
  observer?: BudgetObserver;
  /** Budgets finance set at run time; they win over `global` / `apps` while they exist. */
  overrides?: BudgetOverrides;
}

/** A budget's limit in force and where it comes from. */
export interface ResolvedBudget {
  limitMinor: number | null;
  softMinor: number | null;
  source: 'config' | 'admin';
  /** 0 while nothing was ever set through the admin API. */
  version: number;
  updatedBy: string | null;
  updatedAt: number | null;
  reason: string | null;
}

export interface BudgetObserver {
  denied(denial: BudgetDenial): void;
  settled(app: string, actualMinor: number): void;
}

export interface BudgetDenial {
  ok: false;
  app: string;
  scope: 'app' | 'global';
  period: Period;
  limitMinor: number;
  spentMinor: number;
  reservedMinor: number;
  estimateMinor: number;
}

export interface BudgetStatus {
  scope: 'app' | 'global';
  period: Period;
  periodId: string;
  limitMinor: number | null;
  softMinor: number | null;
  spentMinor: number;
  reservedMinor: number;
  remainingMinor: number | null;
  source: 'config' | 'admin';
  version: number;
  updatedBy: string | null;
  /** ISO time of the last admin change, or null. */
  updatedAt: string | null;
  reason: string | null;
  /** Spend forecast for the end of this period (finance/forecast.ts), never below spentMinor. */
  forecastMinor: number;
}

interface CounterRef {
  spec: BudgetCounterSpec;
  scope: 'app' | 'global';
  period: Period;
  periodId: string;
  softMinor: number | null;
  resolved: ResolvedBudget;
}

export class BudgetGuard {
  constructor(private readonly options: BudgetGuardOptions) {}

  /** The YAML value of a budget (`scope`: an app's name or GLOBAL_SCOPE). */
  baseline(scope: string, period: Period): BudgetLimit | undefined {
    return scope === GLOBAL_SCOPE ? this.options.global[period] : this.options.apps.get(scope)?.[period];
  }

  /** The limit in force for a budget: the admin override while one exists, else the config's. */
  resolve(scope: string, period: Period): ResolvedBudget {
    const stored = this.options.overrides?.get(scope, period);
    const meta = {
      version: stored?.version ?? 0,
      updatedBy: stored?.updatedBy ?? null,
      updatedAt: stored?.updatedAt ?? null,
      reason: stored?.reason ?? null,
    };
    if (stored?.source === 'admin')
      return { limitMinor: stored.limitMinor, softMinor: stored.softMinor, source: 'admin', ...meta };
    const base = this.baseline(scope, period);
    return {
      limitMinor: base?.limitMinor ?? null,
      softMinor: base?.softMinor ?? null,
      source: 'config',
      ...meta,
    };
  }

  /** Brings the admin overrides up to date (memoized; never throws). Awaited before each hold. */
  refresh(): Promise<void> {
    return this.options.overrides?.fresh() ?? Promise.resolve();
  }

  private counters(app: string, now = this.options.clock.now()): CounterRef[] {
    const refs: CounterRef[] = [];
    for (const period of PERIODS) {
      const id = periodId(period, now, this.options.timeZone);
      for (const scope of ['app', 'global'] as const) {
        const resolved = this.resolve(scope === 'app' ? app : GLOBAL_SCOPE, period);
        refs.push({
          scope,
          period,
          periodId: id,
          softMinor: resolved.softMinor,
          resolved,
          spec: {
            key: budgetCounterKey(scope === 'app' ? { app } : 'global', period, id),
            limitMinor: resolved.limitMinor,
            ttlMs: periodTtlMs(period),
          },
        });
      }
    }
    return refs;
  }

  /** True when any cap applies to this app (then unknown prices fall back to the last known). */
  hasCaps(app: string): boolean {
    return PERIODS.some(
      (p) => this.resolve(app, p).limitMinor !== null || this.resolve(GLOBAL_SCOPE, p).limitMinor !== null,
    );
  }

  /** True when a soft threshold applies to this app or globally (soft-limit notices). */
  hasSoft(app: string): boolean {
    return PERIODS.some(
      (p) => this.resolve(app, p).softMinor !== null || this.resolve(GLOBAL_SCOPE, p).softMinor !== null,
    );
  }

  /** The counters a charge of `app` is held and settled on now (one per scope and period). */
  counterSpecs(app: string): BudgetCounterSpec[] {
    return this.counters(app).map((r) => r.spec);
  }

  /** How long counters live after their last change (settling uses the longest period's). */
  get counterTtlMs(): number {
    return periodTtlMs('month');
  }

  /** A refusal by the store (the counter that would pass its cap) as the app's budget denial. */
  denial(app: string, refused: Exclude<ReserveResult, { ok: true }>, estimateMinor: number): BudgetDenial {
    const ref = this.counters(app).find((r) => r.spec.key === refused.key)!;
    const denial: BudgetDenial = {
      ok: false,
      app,
      scope: ref.scope,
      period: ref.period,
      limitMinor: refused.limitMinor,
      spentMinor: refused.spentMinor,
      reservedMinor: refused.reservedMinor,
      estimateMinor,
    };
    this.options.observer?.denied(denial);
    return denial;
  }

  /** A charge of `app` reached the spend (the observer: soft limits, metrics). */
  noteSpent(app: string, amountMinor: number): void {
    if (amountMinor > 0) this.options.observer?.settled(app, amountMinor);
  }

  /** Budgets of one app (and the global ones) for the current periods. */
  async status(app: string): Promise<BudgetStatus[]> {
    await this.refresh();
    const now = this.options.clock.now();
    const refs = this.counters(app, now);
    const plan = forecastPlan(now, this.options.timeZone);
    const [states, appDays, globalDays] = await Promise.all([
      this.options.store.readCounters(refs.map((r) => r.spec.key)),
      this.recentSpend({ app }, plan, now),
      this.recentSpend('global', plan, now),
    ]);
    const spent = (scope: 'app' | 'global', period: Period) =>
      states[refs.findIndex((r) => r.scope === scope && r.period === period)]!.spentMinor;
    const forecasts = {
      app: forecastSpend(plan, {
        spentDayMinor: spent('app', 'day'),
        spentMonthMinor: spent('app', 'month'),
        recentSpentMinor: appDays,
      }),
      global: forecastSpend(plan, {
        spentDayMinor: spent('global', 'day'),
        spentMonthMinor: spent('global', 'month'),
        recentSpentMinor: globalDays,
      }),
    };
    return refs.map((ref, i) => {
      const f = forecasts[ref.scope];
      return toStatus(ref, states[i]!, ref.period === 'day' ? f.dayMinor : f.monthMinor);
    });
  }

  /** Spend on each of plan.recentDays for one scope (cached per store; see the header). */
  private async recentSpend(owner: { app: string } | 'global', plan: ForecastPlan, now: number) {
    const { store } = this.options;
    let cache = historyCache.get(store);
    if (!cache) {
      cache = new Map();
      historyCache.set(store, cache);
    }
    const name = owner === 'global' ? '*global*' : `app:${owner.app}`;
    const hit = cache.get(name);
    if (hit && hit.today === plan.today && now - hit.readAt < HISTORY_REREAD_MS && now >= hit.readAt)
      return hit.values;
    const states = await store.readCounters(plan.recentDays.map((d) => budgetCounterKey(owner, 'day', d)));
    const values = states.map((s) => s.spentMinor);
    if (cache.size > 10_000) cache.clear();
    cache.set(name, { today: plan.today, readAt: now, values });
    return values;
  }

  /** The global budgets plus every configured app's (admin). */
  async overview(apps: readonly string[]): Promise<Record<string, BudgetStatus[]>> {
    const out: Record<string, BudgetStatus[]> = {};
    for (const app of apps) out[app] = (await this.status(app)).filter((s) => s.scope === 'app');
    const global = apps.length ? (await this.status(apps[0]!)).filter((s) => s.scope === 'global') : [];
    out['*global*'] = global;
    return out;
  }
}

/** Full days' spend changes only by a late settlement: read again after this long. */
const HISTORY_REREAD_MS = 3_600_000;
const historyCache = new WeakMap<
  BudgetStore,
  Map<string, { today: string; readAt: number; values: number[] }>
>();

function toStatus(ref: CounterRef, state: CounterState, forecastMinor: number): BudgetStatus {
  const limit = ref.spec.limitMinor;
  return {
    scope: ref.scope,
    period: ref.period,
    periodId: ref.periodId,
    limitMinor: limit,
    softMinor: ref.softMinor,
    spentMinor: state.spentMinor,
    reservedMinor: state.reservedMinor,
    remainingMinor: limit === null ? null : Math.max(0, limit - state.spentMinor - state.reservedMinor),
    source: ref.resolved.source,
    version: ref.resolved.version,
    updatedBy: ref.resolved.updatedBy,
    updatedAt: ref.resolved.updatedAt === null ? null : new Date(ref.resolved.updatedAt).toISOString(),
    reason: ref.resolved.reason,
    forecastMinor,
  };
}
