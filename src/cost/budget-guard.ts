// Spend caps per app and overall, per calendar day and month in the configured time zone: which
// counters a charge of an app is held and settled on, what a refusal says (BudgetDenial, a
// value, not an exception), and the budgets' status. Holding and settling are the money role's
// atomic steps (ChargeBook: openCharge before the call, recordCharge after it); budget maths
// lives here once.
import type { Clock } from '../clock.ts';
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
}

interface CounterRef {
  spec: BudgetCounterSpec;
  scope: 'app' | 'global';
  period: Period;
  periodId: string;
  softMinor: number | null;
}

export class BudgetGuard {
  constructor(private readonly options: BudgetGuardOptions) {}

  private counters(app: string): CounterRef[] {
    const now = this.options.clock.now();
    const refs: CounterRef[] = [];
    for (const period of PERIODS) {
      const id = periodId(period, now, this.options.timeZone);
      const appLimit = this.options.apps.get(app)?.[period];
      const globalLimit = this.options.global[period];
      refs.push({
        scope: 'app',
        period,
        periodId: id,
        softMinor: appLimit?.softMinor ?? null,
        spec: {
          key: budgetCounterKey({ app }, period, id),
          limitMinor: appLimit?.limitMinor ?? null,
          ttlMs: periodTtlMs(period),
        },
      });
      refs.push({
        scope: 'global',
        period,
        periodId: id,
        softMinor: globalLimit?.softMinor ?? null,
        spec: {
          key: budgetCounterKey('global', period, id),
          limitMinor: globalLimit?.limitMinor ?? null,
          ttlMs: periodTtlMs(period),
        },
      });
    }
    return refs;
  }

  /** True when any cap applies to this app (then unknown prices fall back to the last known). */
  hasCaps(app: string): boolean {
    return (
      Object.keys(this.options.global).length > 0 || Object.keys(this.options.apps.get(app) ?? {}).length > 0
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
    const refs = this.counters(app);
    const states = await this.options.store.readCounters(refs.map((r) => r.spec.key));
    return refs.map((ref, i) => toStatus(ref, states[i]!));
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

function toStatus(ref: CounterRef, state: CounterState): BudgetStatus {
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
  };
}
