// Forecasts through the real gateway (emulator upstream, memory store): with 7 days of spend in
// the day counters and a paid call today, GET /admin/budgets gives each budget a forecast_minor
// that is the method's (src/finance/forecast.ts) on the counters' values, never below spent, and
// /metrics exports the same as cpgw_budget_forecast_minor{app,period} for the app and _global.
import { afterAll, describe, expect, it } from 'vitest';
import { budgetCounterKey } from '../../src/cost/budget-periods.ts';
import { forecastPlan, forecastSpend } from '../../src/finance/forecast.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { startHarness } from '../helpers/gateway-harness.ts';

const h = await startHarness({
  apps: [{ name: 'crm', budgets: { month: { limitMinor: 1_000_000 } } }],
  config: { metrics: { sharedReadMinIntervalMs: 0 } },
});
const DAILY = 7000;

interface Budget {
  scope: string;
  period: 'day' | 'month';
  spent_minor: number;
  limit_minor: number | null;
  forecast_minor: number;
}

describe('budget forecasts in /admin/budgets and /metrics', () => {
  afterAll(() => h.close());

  it('forecast_minor follows the method on the last 7 days and today, in the API and the gauge', async () => {
    const { store, clock } = h.gateway;
    const tz = h.config.cost.timeZone;
    const plan = forecastPlan(clock.now(), tz);
    for (const day of plan.recentDays)
      await store.addSpend(
        [budgetCounterKey({ app: 'crm' }, 'day', day), budgetCounterKey('global', 'day', day)],
        DAILY,
        40 * 86_400_000,
      );
    const res = await h.call('crm', `/v1/companies/${knownInns(1, 4242)[0]}`);
    expect(res.status).toBe(200);

    const answer = (await (
      await fetch(`${h.gateway.url}/admin/budgets`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).json()) as { budgets: Record<string, Budget[]> };
    const crm = answer.budgets.crm!;
    const day = crm.find((b) => b.period === 'day')!;
    const month = crm.find((b) => b.period === 'month')!;
    expect(day.spent_minor).toBeGreaterThan(0);
    const expected = forecastSpend(forecastPlan(clock.now(), tz), {
      spentDayMinor: day.spent_minor,
      spentMonthMinor: month.spent_minor,
      recentSpentMinor: plan.recentDays.map(() => DAILY),
    });
    // The gateway read a moment earlier: the day's elapsed fraction moved by a few seconds at most.
    expect(Math.abs(day.forecast_minor - expected.dayMinor)).toBeLessThanOrEqual(20);
    expect(Math.abs(month.forecast_minor - expected.monthMinor)).toBeLessThanOrEqual(20);
    expect(month.forecast_minor).toBeGreaterThanOrEqual(month.spent_minor + DAILY * plan.daysAfterToday);
    for (const b of [...crm, ...answer.budgets['*global*']!])
      expect(b.forecast_minor).toBeGreaterThanOrEqual(b.spent_minor);

    const text = await (await fetch(`${h.gateway.url}/metrics`)).text();
    const gauge = (app: string, period: string) => {
      const m = new RegExp(
        `^cpgw_budget_forecast_minor\\{app="${app}",period="${period}"\\} (\\d+)$`,
        'm',
      ).exec(text);
      expect(m, `${app}/${period}`).not.toBeNull();
      return Number(m![1]);
    };
    expect(Math.abs(gauge('crm', 'month') - month.forecast_minor)).toBeLessThanOrEqual(20);
    expect(Math.abs(gauge('crm', 'day') - day.forecast_minor)).toBeLessThanOrEqual(20);
    const globalMonth = answer.budgets['*global*']!.find((b) => b.period === 'month')!;
    expect(Math.abs(gauge('_global', 'month') - globalMonth.forecast_minor)).toBeLessThanOrEqual(20);
  });
});
