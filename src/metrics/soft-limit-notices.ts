// Soft budget thresholds that act. After a charge settles, the app's and the global budgets of
// the current periods are read; a soft threshold reached for the first time in its period
// (across all replicas: a store lock keyed by budget and period id is the "already told"
// mark) logs one warning, counts cpgw_budget_soft_crossings_total, and, when notices.url is
// set, POSTs a Slack-compatible JSON notice `{ text, budget }` to it.
// (cpgw_budget_soft_exceeded, the level, is a shared gauge read at scrape time.)
//
// Runs beside the request, never in its way: a slow receiver or a store fault is logged and
// counted, never surfaces to the app. Must never: send an INN, a token or a request id.
import type { Logger } from 'pino';
import type { BudgetDenial, BudgetGuard, BudgetObserver, BudgetStatus } from '../cost/budget-guard.ts';
import { periodTtlMs } from '../cost/budget-periods.ts';
import type { Store } from '../store/store.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { GLOBAL_APP } from './metric-catalogue.ts';

export interface SoftLimitNoticesOptions {
  budgets: Pick<BudgetGuard, 'status'>;
  store: Pick<Store, 'acquireLock'>;
  metrics: GatewayMetrics;
  logger: Logger;
  /** True when the app or the global budget has a soft threshold (else nothing is read). */
  hasSoft(app: string): boolean;
  notice: { url: string | null; timeoutMs: number };
}

export interface SoftLimitNotice {
  text: string;
  budget: {
    app: string;
    period: string;
    period_id: string;
    soft_minor: number;
    limit_minor: number | null;
    spent_minor: number;
  };
}

export class SoftLimitNotices implements BudgetObserver {
  private pending = new Set<Promise<void>>();

  constructor(private readonly o: SoftLimitNoticesOptions) {}

  denied(denial: BudgetDenial): void {
    this.o.metrics.budgetRejected(denial.app, denial.scope, denial.period);
  }

  settled(app: string, _actualMinor: number): void {
    if (!this.o.hasSoft(app)) return;
    const job = this.check(app).catch((err: unknown) => {
      this.o.metrics.storeError('notice');
      this.o.logger.warn({ err: (err as Error).message, app }, 'soft budget check failed');
    });
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  /** Resolves when every check started so far has finished (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private async check(app: string): Promise<void> {
    for (const s of await this.o.budgets.status(app)) {
      if (s.softMinor === null || s.spentMinor < s.softMinor) continue;
      const owner = s.scope === 'app' ? app : GLOBAL_APP;
      const mark = `notice:soft:${owner}:${s.period}:${s.periodId}`;
      if (!(await this.o.store.acquireLock(mark, 'sent', periodTtlMs(s.period)))) continue;
      await this.cross(owner, s);
    }
  }

  private async cross(owner: string, s: BudgetStatus): Promise<void> {
    const { metrics, logger, notice } = this.o;
    metrics.m.softLimitCrossings.inc({ app: owner, period: s.period });
    const body = softLimitNotice(owner, s);
    logger.warn({ budget: body.budget }, 'soft budget threshold crossed');
    if (!notice.url) return;
    try {
      const res = await fetch(notice.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(notice.timeoutMs),
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`receiver answered ${res.status}`);
      metrics.m.softLimitNotices.inc({ result: 'sent' });
    } catch (err) {
      metrics.m.softLimitNotices.inc({ result: 'failed' });
      logger.warn({ err: (err as Error).message, budget: body.budget }, 'soft budget notice not delivered');
    }
  }
}

/** The notice body: `text` for Slack-compatible receivers, `budget` for machines. */
export function softLimitNotice(owner: string, s: BudgetStatus): SoftLimitNotice {
  const who = owner === GLOBAL_APP ? 'All apps together have' : `App "${owner}" has`;
  const rub = (minor: number) => (minor / 100).toFixed(2);
  const cap = s.limitMinor === null ? 'no hard cap' : `hard cap ${rub(s.limitMinor)}`;
  return {
    text: `cpgw: ${who} spent ${rub(s.spentMinor)} of the ${s.period} budget ${s.periodId}, past the soft threshold ${rub(s.softMinor ?? 0)} (${cap}).`,
    budget: {
      app: owner,
      period: s.period,
      period_id: s.periodId,
      soft_minor: s.softMinor ?? 0,
      limit_minor: s.limitMinor,
      spent_minor: s.spentMinor,
    },
  };
}
